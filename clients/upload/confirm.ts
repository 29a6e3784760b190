import { type Ids, type PartEtag, pause, UploadError, type UploadIo, type Version } from './io.js';

const VERIFY_POLL_MS = 1000;

/**
 * Confirms the upload (with every part's ETag, for a multipart one) and answers the version once the service has
 * verified it: a single PUT is checked at once; a multipart upload is hashed by the service after the answer.
 */
export async function completeUpload(
  io: UploadIo,
  ids: Ids,
  parts: PartEtag[],
  sha256: string,
): Promise<Version> {
  io.onProgress?.({ phase: 'confirming', loaded: 0, total: 0 });
  const v = await io.must(
    io.files.POST('/files/{fileId}/versions/{versionId}/confirm', {
      params: { path: { fileId: ids.fileId, versionId: ids.versionId } },
      body: parts.length ? { parts } : {},
      signal: io.signal,
    }),
    'POST confirm',
  );
  return v.state === 'available' ? checkSha(v, sha256) : waitUntilVerified(io, ids, sha256);
}

/** Polls the version until the service has verified the stored object (available) or refused it (failed). */
export async function waitUntilVerified(io: UploadIo, { fileId, versionId }: Ids, sha256: string) {
  for (let polls = 0; ; polls++) {
    const v = await io.must(
      io.files.GET('/files/{fileId}/versions/{versionId}', {
        params: { path: { fileId, versionId } },
        signal: io.signal,
      }),
      'GET version',
    );
    if (v.state === 'available') return checkSha(v, sha256);
    if (v.state === 'failed')
      throw new UploadError(`the service refused the upload: version ${versionId} failed verification`);
    if (polls === 0) io.onProgress?.({ phase: 'verifying', loaded: 0, total: 0 });
    await pause(VERIFY_POLL_MS);
    io.signal?.throwIfAborted();
  }
}

function checkSha(v: Version, sha256: string): Version {
  if (v.sha256 !== sha256)
    throw new UploadError(`the version record's SHA-256 ${v.sha256} differs from the file's ${sha256}`);
  return v;
}
