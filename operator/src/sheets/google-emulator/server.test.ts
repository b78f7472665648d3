// The emulator, driven by the real googleapis client, behaves like the Sheets v4 API.

import { google, type sheets_v4 } from 'googleapis';
import { afterEach, describe, expect, it } from 'vitest';
import { testAuth } from '../store/testing.ts';
import { parseA1 } from './a1.ts';
import { SheetsEmulator } from './server.ts';

const emus: SheetsEmulator[] = [];
afterEach(async () => {
  for (const e of emus.splice(0)) await e.close();
});

async function start(opts: ConstructorParameters<typeof SheetsEmulator>[0] = {}) {
  const emu = new SheetsEmulator(opts);
  emus.push(emu);
  await emu.listen();
  const api = (user = 'alice'): sheets_v4.Sheets =>
    google.sheets({ version: 'v4', auth: testAuth(user), rootUrl: emu.url, retry: false });
  return { emu, api, id: emu.createSpreadsheet('t', ['Sheet1']) };
}

async function failure(
  p: Promise<unknown>,
): Promise<{ status: number; body: { error: Record<string, unknown> } }> {
  try {
    await p;
  } catch (e) {
    const r = (e as { response?: { status: number; data: { error: Record<string, unknown> } } }).response;
    if (r) return { status: r.status, body: r.data };
    throw e;
  }
  throw new Error('expected the request to fail');
}

describe('A1 notation', () => {
  it('parses sheet-qualified, quoted, open-ended and bare-sheet ranges', () => {
    expect(parseA1('Nodes!A1:D5')).toEqual({
      sheet: 'Nodes',
      startRow: 0,
      startCol: 0,
      endRow: 5,
      endCol: 4,
    });
    expect(parseA1("'My ''tab'''!B:C")).toMatchObject({
      sheet: "My 'tab'",
      startCol: 1,
      endCol: 3,
      endRow: undefined,
    });
    expect(parseA1('Pods')).toMatchObject({ sheet: 'Pods', startRow: 0, endRow: undefined });
    expect(parseA1('A2:AA10')).toMatchObject({
      sheet: undefined,
      startRow: 1,
      startCol: 0,
      endCol: 27,
      endRow: 10,
    });
    expect(parseA1('Pods!3:4')).toMatchObject({ startRow: 2, endRow: 4, endCol: undefined });
    expect(() => parseA1("'open")).toThrow(/Unable to parse range/);
  });
});

describe('Sheets v4 emulator through googleapis', () => {
  it('spreadsheets.get lists sheets with properties and grid size', async () => {
    const { api, id } = await start();
    const r = await api().spreadsheets.get({ spreadsheetId: id });
    expect(r.data.spreadsheetId).toBe(id);
    expect(r.data.sheets?.[0].properties).toMatchObject({
      sheetId: 0,
      title: 'Sheet1',
      index: 0,
      sheetType: 'GRID',
      gridProperties: { rowCount: 1000, columnCount: 26 },
    });
  });

  it('addSheet works once and then fails with Google\'s "already exists" error, applying nothing', async () => {
    const { api, id } = await start();
    const ok = await api().spreadsheets.batchUpdate({
      spreadsheetId: id,
      requestBody: { requests: [{ addSheet: { properties: { title: 'Nodes' } } }] },
    });
    expect(ok.data.replies?.[0].addSheet?.properties?.title).toBe('Nodes');
    const f = await failure(
      api().spreadsheets.batchUpdate({
        spreadsheetId: id,
        requestBody: {
          requests: [
            { addSheet: { properties: { title: 'Pods' } } },
            { addSheet: { properties: { title: 'Nodes' } } },
          ],
        },
      }),
    );
    expect(f.status).toBe(400);
    expect(f.body.error).toEqual({
      code: 400,
      message:
        'Invalid requests[1].addSheet: A sheet with the name "Nodes" already exists. Please enter another name.',
      status: 'INVALID_ARGUMENT',
    });
    const titles = (await api().spreadsheets.get({ spreadsheetId: id })).data.sheets?.map(
      (s) => s.properties?.title,
    );
    expect(titles).toEqual(['Sheet1', 'Nodes']); // "Pods" was not added: the batch is atomic
  });

  it('RAW stores "=1+1" as text; USER_ENTERED makes it a formula and parses numbers', async () => {
    const { api, id } = await start();
    await api().spreadsheets.values.update({
      spreadsheetId: id,
      range: 'Sheet1!A1:C1',
      valueInputOption: 'RAW',
      requestBody: { values: [['=1+1', '42', true]] },
    });
    await api().spreadsheets.values.update({
      spreadsheetId: id,
      range: 'Sheet1!A2',
      valueInputOption: 'USER_ENTERED',
      requestBody: { values: [['=1+1', '42', "'007"]] },
    });
    const un = await api().spreadsheets.values.get({
      spreadsheetId: id,
      range: 'Sheet1',
      valueRenderOption: 'UNFORMATTED_VALUE',
    });
    expect(un.data.values).toEqual([
      ['=1+1', '42', true],
      [2, 42, '007'],
    ]);
    expect(un.data.range).toBe('Sheet1!A1:Z1000');
    const fm = await api().spreadsheets.values.get({
      spreadsheetId: id,
      range: 'Sheet1!A1:A2',
      valueRenderOption: 'FORMULA',
    });
    expect(fm.data.values).toEqual([['=1+1'], ['=1+1']]);
    const formatted = await api().spreadsheets.values.get({ spreadsheetId: id, range: 'Sheet1!A1:C1' });
    expect(formatted.data.values).toEqual([['=1+1', '42', 'TRUE']]);
  });

  it("values.batchGet, batchUpdate, append and clear answer with Google's shapes", async () => {
    const { api, id } = await start();
    const bu = await api().spreadsheets.values.batchUpdate({
      spreadsheetId: id,
      requestBody: {
        valueInputOption: 'RAW',
        data: [
          {
            range: 'Sheet1!A1:B2',
            values: [
              ['name', 'n'],
              ['a', 1],
            ],
          },
          { range: 'Sheet1!D1', values: [['x']] },
        ],
      },
    });
    expect(bu.data).toMatchObject({ totalUpdatedCells: 5, totalUpdatedRows: 3, totalUpdatedSheets: 1 });
    const ap = await api().spreadsheets.values.append({
      spreadsheetId: id,
      range: 'Sheet1!A1:B1',
      valueInputOption: 'RAW',
      requestBody: { values: [['b', 2]] },
    });
    expect(ap.data.tableRange).toBe('Sheet1!A1:B2');
    expect(ap.data.updates?.updatedRange).toBe('Sheet1!A3:B3');
    const cl = await api().spreadsheets.values.clear({ spreadsheetId: id, range: 'Sheet1!D1:D1' });
    expect(cl.data.clearedRange).toBe('Sheet1!D1');
    const bg = await api().spreadsheets.values.batchGet({
      spreadsheetId: id,
      ranges: ['Sheet1!A1:B3', 'Sheet1!D1:D3'],
      valueRenderOption: 'UNFORMATTED_VALUE',
    });
    expect(bg.data.valueRanges?.[0].values).toEqual([
      ['name', 'n'],
      ['a', 1],
      ['b', 2],
    ]);
    expect(bg.data.valueRanges?.[1].values).toBeUndefined(); // empty ranges carry no "values"
  });

  it("refuses a cell over 50,000 characters with Google's 400 and writes nothing", async () => {
    const { api, id, emu } = await start();
    const f = await failure(
      api().spreadsheets.values.update({
        spreadsheetId: id,
        range: 'Sheet1!A1:B1',
        valueInputOption: 'RAW',
        requestBody: { values: [['ok', 'x'.repeat(55_000)]] },
      }),
    );
    expect(f.status).toBe(400);
    expect(f.body.error.message).toBe(
      'Your input contains more than the maximum of 50000 characters in a single cell.',
    );
    expect(emu.peek(id, 'Sheet1')).toEqual([]);
  });

  it('refuses to grow the spreadsheet past its cell limit and writes outside the grid', async () => {
    const { api, id } = await start({ maxCells: 30_000 }); // the real limit is 10 M; same check, smaller grid
    const f = await failure(
      api().spreadsheets.batchUpdate({
        spreadsheetId: id,
        requestBody: { requests: [{ addSheet: { properties: { title: 'Big' } } }] },
      }),
    );
    expect(f.body.error.message).toBe(
      'Invalid requests[0].addSheet: This action would increase the number of cells in the workbook above the limit of 30000 cells.',
    );
    const g = await failure(
      api().spreadsheets.values.update({
        spreadsheetId: id,
        range: 'Sheet1!A1000:A1001',
        valueInputOption: 'RAW',
        requestBody: { values: [['a'], ['b']] },
      }),
    );
    expect(g.body.error.message).toBe(
      'Range (Sheet1!A1001) exceeds grid limits. Max rows: 1000, max columns: 26',
    );
  });

  it('enforces the per-user per-minute quota with 429 RESOURCE_EXHAUSTED, separately per user and kind', async () => {
    let now = 1_000_000;
    const { api, id } = await start({
      now: () => now,
      quotas: { writesPerMinutePerUser: 3, readsPerMinutePerUser: 5 },
    });
    const write = (user: string) =>
      api(user).spreadsheets.values.update({
        spreadsheetId: id,
        range: 'Sheet1!A1',
        valueInputOption: 'RAW',
        requestBody: { values: [[user]] },
      });
    for (let i = 0; i < 3; i++) await write('alice');
    const f = await failure(write('alice'));
    expect(f.status).toBe(429);
    expect(f.body.error.status).toBe('RESOURCE_EXHAUSTED');
    expect(f.body.error.message).toMatch(
      /^Quota exceeded for quota metric 'Write requests' and limit 'Write requests per minute per user' of service 'sheets.googleapis.com' for consumer 'project_number:\d+'\.$/,
    );
    expect((f.body.error.details as { reason?: string }[])[0].reason).toBe('RATE_LIMIT_EXCEEDED');
    await write('bob'); // another user has their own quota
    await api('alice').spreadsheets.get({ spreadsheetId: id }); // reads are counted apart from writes
    now += 60_001;
    await write('alice'); // the window has passed
  });

  it('answers 401 without credentials and 404 for an unknown spreadsheet', async () => {
    const { emu, api } = await start();
    const r = await fetch(`${emu.url}v4/spreadsheets/nope`);
    expect(r.status).toBe(401);
    expect(((await r.json()) as { error: { status: string } }).error.status).toBe('UNAUTHENTICATED');
    const f = await failure(api().spreadsheets.get({ spreadsheetId: 'nope' }));
    expect(f.status).toBe(404);
    expect(f.body.error.message).toBe('Requested entity was not found.');
  });
});

describe('a spreadsheet with a fixed id, for a test cluster that names it before the emulator starts', () => {
  it('is served under that id; an id Google would not issue, or one taken, is refused in words', async () => {
    const emu = new SheetsEmulator();
    emus.push(emu);
    const id = emu.createSpreadsheet('cluster', ['Sheet1'], 'test-cluster-sheet');
    expect(id).toBe('test-cluster-sheet');
    await emu.listen(0, '127.0.0.1');
    const api = google.sheets({ version: 'v4', auth: testAuth('bob'), rootUrl: emu.url, retry: false });
    const got = await api.spreadsheets.get({ spreadsheetId: id });
    expect(got.data.properties?.title).toBe('cluster');
    expect(() => emu.createSpreadsheet('x', ['Sheet1'], 'short')).toThrow(/10 to 128 of A-Z a-z 0-9 _ -/);
    expect(() => emu.createSpreadsheet('x', ['Sheet1'], 'has/slash-in-it')).toThrow(/10 to 128/);
    expect(() => emu.createSpreadsheet('x', ['Sheet1'], 'test-cluster-sheet')).toThrow(/already exists/);
  });
});
