import type { Caller } from './access.js';
import type { FileSummary, RequestInfo } from './model.js';
import { createFile, createVersion, type NewUpload, type UploadStarted } from './uploads.js';

/**
 * The answer to the start of an upload (uploads.ts), with what the file listings show of its file: its state and
 * newest available version, and for a new file whether its study already had a file of that name. Such a name is
 * accepted, as the original service accepted it, and marked (`duplicate_name`), so that a client can warn or refuse
 * (`drc files upload` refuses it unless told otherwise).
 */
export interface StartedUpload extends UploadStarted {
  summary: FileSummary;
  duplicateName: boolean;
}

type Deps = Parameters<typeof createFile>[0];

export async function startNewFile(
  deps: Deps,
  caller: Caller,
  studyId: string,
  input: NewUpload & { name?: string; description?: string | null },
  info: RequestInfo,
): Promise<StartedUpload> {
  const started = await createFile(deps, caller, studyId, input, info);
  const duplicateName = await deps.files.hasFileNamed(studyId, started.file.name, started.file.id);
  return { ...started, summary: { state: 'pending', latest: null }, duplicateName };
}

export async function startNewVersion(
  deps: Deps,
  caller: Caller,
  fileId: string,
  input: NewUpload,
  info: RequestInfo,
): Promise<StartedUpload> {
  const started = await createVersion(deps, caller, fileId, input, info);
  const [summary] = await deps.files.summaries([fileId]);
  return { ...started, summary, duplicateName: false };
}
