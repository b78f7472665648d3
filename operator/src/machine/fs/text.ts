// Oberon texts on disk: either plain ASCII with CR line ends (all texts of the base image) or a
// formatted text (Texts.Store): tag F1, the file offset of the characters, a run table, the
// length, then the characters.

const TEXT_TAG = 0xf1; // Texts.TextTag

/** The characters of an Oberon text with LF line ends (a formatted text's run table dropped). */
export function fromOberonText(data: Uint8Array): Buffer {
  let body = Buffer.from(data);
  if (body.length >= 5 && body[0] === TEXT_TAG) {
    const off = body.readInt32LE(1); // where the characters start; the length is the word before
    if (off >= 9 && off <= body.length) {
      const len = body.readInt32LE(off - 4);
      if (len >= 0 && off + len <= body.length) body = body.subarray(off, off + len);
    }
  }
  return Buffer.from(body.toString('latin1').replace(/\r\n?/g, '\n'), 'latin1');
}

/** A host text as Oberon keeps plain texts: CR line ends. */
export function toOberonText(data: Uint8Array): Buffer {
  return Buffer.from(Buffer.from(data).toString('latin1').replace(/\r?\n/g, '\r'), 'latin1');
}
