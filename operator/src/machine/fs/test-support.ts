// Shared by the file-system tests and the disk builder tests: where the base image is and what
// the spec (risc5-machine-and-disk.md §2.5) says is on it.
import { chmod, copyFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findBaseImage } from '../base-image.ts';

/** The 136 files of Oberon-2020-08-18.dsk with their sizes, as listed in the spec. */
export const BASE_IMAGE_FILES: ReadonlyMap<string, number> = new Map(
  (
    'Blink.Mod 324; Blink.rsc 326; Blink.smb 40; BootLoad.Mod 6604; Checkers.Mod 1531; Checkers.rsc ' +
    '1252; Checkers.smb 32; Clipboard.Mod 1514; Clipboard.rsc 941; Clipboard.smb 72; Curves.Mod 8938; ' +
    'Curves.rsc 7251; Curves.smb 672; Display.Mod 9050; Display.Orig.Mod 8205; Display.rsc 5140; ' +
    'Display.smb 464; Draw.Mod 5086; Draw.Tool 280; Draw.rsc 3090; Draw.smb 168; EBNF.Mod 12104; ' +
    'EBNF.rsc 6753; EBNF.smb 88; Edit.Mod 7832; Edit.rsc 4743; Edit.smb 156; FileDir.Mod 12650; ' +
    'FileDir.rsc 7988; FileDir.smb 580; Files.Mod 16395; Files.rsc 9830; Files.smb 760; Fonts.Mod 4064; ' +
    'Fonts.rsc 2649; Fonts.smb 200; GraphTool.Mod 11314; GraphTool.rsc 7625; GraphTool.smb 96; ' +
    'GraphicFrames.Mod 19646; GraphicFrames.rsc 12734; GraphicFrames.smb 1476; Graphics.Mod 23924; ' +
    'Graphics.rsc 15546; Graphics.smb 1992; Hilbert.Mod 2606; Hilbert.rsc 2397; Hilbert.smb 32; ' +
    'Input.Mod 2828; Input.Orig.Mod 2724; Input.rsc 1175; Input.smb 112; Kernel.Mod 9986; Kernel.rsc ' +
    '4948; Kernel.smb 388; MacroTool.Mod 2958; MacroTool.rsc 1899; MacroTool.smb 96; Math.Mod 3172; ' +
    'Math.rsc 1869; Math.smb 88; MenuViewers.Mod 7956; MenuViewers.rsc 6437; MenuViewers.smb 364; ' +
    'Modules.Mod 9143; Modules.rsc 5155; Modules.smb 328; Net.Mod 12064; ORB.Mod 17612; ORB.rsc 10978; ' +
    'ORB.smb 820; ORC.Mod 7859; ORG.Mod 39492; ORG.rsc 28041; ORG.smb 1916; ORP.Mod 42114; ORP.rsc ' +
    '27561; ORP.smb 32; ORS.Mod 10950; ORS.rsc 7737; ORS.smb 820; ORTool.Mod 10379; ORTool.rsc 8254; ' +
    'ORTool.smb 48; Oberon.Mod 12299; Oberon.rsc 7619; Oberon.smb 1692; Oberon10.Scn.Fnt 2284; ' +
    'Oberon10b.Scn.Fnt 2185; Oberon10i.Scn.Fnt 2167; Oberon12.Scn.Fnt 2332; Oberon12b.Scn.Fnt 2327; ' +
    'Oberon12i.Scn.Fnt 2298; Oberon16.Scn.Fnt 2907; Oberon8.Scn.Fnt 1986; Oberon8i.Scn.Fnt 1990; ' +
    'OberonSyntax.Text 3498; PCLink1.Mod 2861; PCLink1.rsc 1738; PCLink1.smb 44; PIO.Mod 1038; RISC.Mod ' +
    '3312; RS232.Mod 1582; RS232.rsc 955; RS232.smb 204; Rectangles.Mod 4535; Rectangles.rsc 2970; ' +
    'Rectangles.smb 656; SCC.Mod 6329; SCC.rsc 2576; SCC.smb 216; Sierpinski.Mod 3295; Sierpinski.rsc ' +
    '2934; Sierpinski.smb 36; SmallPrograms.Mod 6678; Stars.Mod 3701; Stars.rsc 2957; Stars.smb 96; ' +
    'System.Mod 15247; System.Tool 560; System.rsc 9835; System.smb 392; TTL0.Lib 15058; TTL1.Lib 17256; ' +
    'TextFrames.Mod 32521; TextFrames.rsc 23630; TextFrames.smb 1644; Texts.Mod 18261; Texts.rsc 12082; ' +
    'Texts.smb 1260; Tools.Mod 4282; Tools.rsc 2815; Tools.smb 116; Viewers.Mod 6859; Viewers.rsc 5848; ' +
    'Viewers.smb 548'
  )
    .split(';')
    .map((s) => s.trim().split(' '))
    .map(([name, size]) => [name, Number(size)] as [string, number]),
);

/** A private copy of the base image in a fresh temporary folder (tests never touch the original). */
export async function baseImageCopy(): Promise<string> {
  const found = await findBaseImage({ download: false });
  const dir = await mkdtemp(join(tmpdir(), 'retrokube-fs-'));
  const path = join(dir, 'base.dsk');
  await copyFile(found.path, path);
  await chmod(path, 0o644); // the shared original may be read-only
  return path;
}
