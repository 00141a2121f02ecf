import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { isUntouched } from './header.js'

/** A file as the database gives it now. */
export interface GeneratedFile {
  readonly path: string
  readonly text: string
}

/** What a run did with one file. */
export interface FileOutcome {
  readonly path: string
  /**
   * `wrote`: new or updated; `unchanged`: already what the database gives; `kept`: edited since it was generated,
   * so left as it is, with the new version written beside it as `<path>.new` (`--check`: nothing written).
   */
  readonly outcome: 'wrote' | 'unchanged' | 'kept'
}

/** The suffix of the new version of an edited file, written beside it for the user to merge. */
export const newVersionSuffix = '.new'

/**
 * Writes the files of a run: a file still as generated (its hash matches) is updated, an edited one is kept and its
 * new version written beside it (`force` overwrites it instead), so that rerunning after the database changes never
 * loses an edit and never refuses the rest. With `check`, nothing is written: the outcomes say what would be.
 */
export async function writeGenerated (
  out: string,
  files: readonly GeneratedFile[],
  { force = false, check = false }: { force?: boolean; check?: boolean }
): Promise<FileOutcome[]> {
  const outcomes: FileOutcome[] = []
  for (const file of files) {
    const existing = await readFile(file.path, 'utf8').catch(() => undefined)
    if (existing === file.text) outcomes.push({ path: file.path, outcome: 'unchanged' })
    else {
      const current = existing === undefined || force || isUntouched(existing)
      outcomes.push({ path: file.path, outcome: current ? 'wrote' : 'kept' })
    }
  }
  if (check) return outcomes
  await mkdir(out, { recursive: true })
  for (const [index, { outcome }] of outcomes.entries()) {
    const file = files[index]
    if (file === undefined) continue
    const beside = `${file.path}${newVersionSuffix}`
    if (outcome === 'kept') await writeFile(beside, file.text)
    else {
      if (outcome === 'wrote') await writeFile(file.path, file.text)
      // A new version left from an earlier run is stale once the file itself is current.
      await rm(beside, { force: true })
    }
  }
  return outcomes
}
