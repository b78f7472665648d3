// Checks an Oberon object file (.rsc) the way Modules.Load reads it: header, imports, type
// descriptors, data, strings, code, commands, entries, pointer list, fixup roots and the final
// "O". A file that passes loads without Modules reporting "corrupted file".

export interface ObjectFile {
  module: string;
  key: number; // unsigned 32-bit
  version: number;
  imports: { name: string; key: number }[];
  codeWords: number;
  commands: string[];
}

export class ObjectFileError extends Error {
  override name = 'ObjectFileError';
}

export function parseObjectFile(data: Uint8Array): ObjectFile {
  const b = Buffer.from(data.buffer, data.byteOffset, data.length);
  let p = 0;
  const need = (n: number, what: string) => {
    if (p + n > b.length) throw new ObjectFileError(`object file ends inside ${what} at byte ${p}`);
  };
  const int = (what: string): number => {
    need(4, what);
    const v = b.readInt32LE(p);
    p += 4;
    return v;
  };
  const str = (what: string): string => {
    const end = b.indexOf(0, p);
    if (end < 0) throw new ObjectFileError(`object file ends inside ${what} at byte ${p}`);
    const s = b.toString('latin1', p, end);
    p = end + 1;
    return s;
  };
  const count = (n: number, unit: number, what: string): void => {
    if (n < 0 || n * unit > b.length) throw new ObjectFileError(`impossible ${what} size ${n}`);
  };
  const module = str('the module name');
  const key = int('the key') >>> 0;
  need(1, 'the version');
  const version = b[p++];
  if (version !== 1) throw new ObjectFileError(`object file version ${version}, Modules.Load wants 1`);
  int('the size');
  const imports: { name: string; key: number }[] = [];
  for (let name = str('the imports'); name !== ''; name = str('the imports')) {
    imports.push({ name, key: int(`the key of import ${name}`) >>> 0 });
  }
  const td = int('the type descriptor size');
  count(td, 1, 'type descriptor');
  need(td, 'the type descriptors');
  p += Math.ceil(td / 4) * 4;
  int('the variable size');
  const strx = int('the string size');
  count(strx, 1, 'string');
  need(strx, 'the strings');
  p += strx;
  const pc = int('the code size');
  count(pc, 4, 'code');
  need(pc * 4, 'the code');
  p += pc * 4;
  const commands: string[] = [];
  for (let name = str('the commands'); name !== ''; name = str('the commands')) {
    commands.push(name);
    int(`the offset of command ${name}`);
  }
  const nofent = int('the entry count');
  count(nofent, 4, 'entry');
  need(nofent * 4, 'the entries');
  p += nofent * 4;
  for (let w = int('the pointer list'); w >= 0; w = int('the pointer list')) {
    /* pointer offsets */
  }
  for (const what of ['fixorgP', 'fixorgD', 'fixorgT', 'the body entry']) int(what);
  need(1, 'the final mark');
  if (b[p] !== 0x4f) throw new ObjectFileError(`object file does not end with "O" (found ${b[p]})`);
  p++;
  if (p !== b.length) throw new ObjectFileError(`${b.length - p} bytes after the final "O"`);
  return { module, key, version, imports, codeWords: pc, commands };
}
