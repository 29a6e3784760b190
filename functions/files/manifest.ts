import type { Page } from '../shared/list.js';
import type { Caller } from './access.js';
import { describeStudyFiles } from './catalog.js';
import type { FileState, VersionRecord } from './model.js';
import type { FilesDeps } from './ports.js';

/**
 * A study's manifest (GET /studies/<sid>/manifest): what a whole-study download, a workflow engine or a script needs
 * to fetch every file, one row per file with an available version. It pages through the study's files as
 * GET /studies/<sid>/files does (`count` counts them); the files of a page with no available version are not rows
 * but are named in `skipped`, with their state. Anyone who may download the study's files may read it: admins,
 * members, and developer tokens that cover the study (docs/downloads.md).
 */
export interface SkippedFile {
  file_id: string;
  name: string;
  state: Exclude<FileState, 'available'>;
  reason: string;
}

export interface ManifestPage {
  /** The study's files, as the list of files counts them. */
  count: number;
  /** The newest available version of each file of the page that has one, in the list's order. */
  rows: VersionRecord[];
  skipped: SkippedFile[];
}

const REASONS: Record<SkippedFile['state'], string> = {
  pending: 'no available version: its newest upload was never confirmed',
  verifying: 'no available version yet: its newest upload is being verified',
  failed: 'no available version: its newest upload failed verification',
  no_versions: 'no available version: it has no versions',
};

export async function studyManifest(
  deps: Pick<FilesDeps, 'studies' | 'files'>,
  caller: Caller,
  studyId: string,
  page: Page,
): Promise<ManifestPage> {
  const listing = await describeStudyFiles(deps, caller, studyId, page);
  const rows: VersionRecord[] = [];
  const skipped: SkippedFile[] = [];
  for (const { file, summary } of listing.items) {
    if (summary.latest) rows.push(summary.latest);
    else if (summary.state !== 'available')
      skipped.push({
        file_id: file.id,
        name: file.name,
        state: summary.state,
        reason: REASONS[summary.state],
      });
  }
  return { count: listing.count, rows, skipped };
}
