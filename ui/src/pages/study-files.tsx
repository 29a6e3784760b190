import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { type Api, ApiError, type FileVersion, must, type StudyFile } from '../api';
import { Alert, Empty, Loading, PageTitle, ProgressBar, StateBadge } from '../components/ui';
import { useApp } from '../context';
import { bytes, idOf, secondsUntil, time, when } from '../format';
import { messageOf, usePolled } from '../hooks';
import { Link } from '../router';
import { type UploadState, uploadFile } from '../upload';

interface UploadItem {
  key: number;
  name: string;
  state: UploadState;
}

const PHASE_LABEL: Record<UploadState['phase'], string> = {
  hashing: 'Computing SHA-256',
  uploading: 'Uploading',
  confirming: 'Verifying',
  done: 'Uploaded',
  failed: 'Failed',
};

/**
 * The files of a study: every file and version with size, SHA-256 and state; uploads (drag and drop or a file
 * picker, multipart for large files) with a progress bar; downloads and copyable single-use signed URLs.
 */
export function StudyFilesPage({ studyId }: { studyId: string }) {
  const { api, session } = useApp();
  const study = usePolled(
    `study ${studyId}`,
    (init) => api.coordinator.GET('/studies/{id}', { params: { path: { id: studyId } }, ...init }),
    60_000,
  );
  const files = usePolled(
    `files ${studyId}`,
    (init) =>
      api.files.GET('/studies/{studyId}/files', {
        params: { path: { studyId }, query: { limit: 100 } },
        ...init,
      }),
    5000,
  );
  const [uploads, setUploads] = useState<UploadItem[]>([]);
  const [generation, setGeneration] = useState(0);
  const canUpload = session.isAdmin || session.groups.includes(studyId);
  const name = study.data?.name ?? studyId;

  const start = (list: FileList | File[], fileId?: string) => {
    for (const file of Array.from(list)) {
      const key = Date.now() + Math.random();
      const update = (state: UploadState) =>
        setUploads((all) => all.map((u) => (u.key === key ? { ...u, state } : u)));
      setUploads((all) => [
        { key, name: file.name, state: { phase: 'hashing', loaded: 0, total: file.size } },
        ...all,
      ]);
      uploadFile(api, fileId ? { fileId } : { studyId }, file, update).then(
        () => {
          files.refresh();
          setGeneration((g) => g + 1);
        },
        (err) => update({ phase: 'failed', loaded: 0, total: file.size, error: messageOf(err) }),
      );
    }
  };

  const forbidden = files.error instanceof ApiError && files.error.status === 403;
  return (
    <section>
      <p class="crumbs">
        <Link href="/studies">Studies</Link> / <Link href={`/studies/${studyId}`}>{name}</Link> / files
      </p>
      <PageTitle title={`Files of ${name}`}>Files of {name}</PageTitle>
      {canUpload && <UploadPanel onFiles={(f) => start(f)} uploads={uploads} />}
      {forbidden && <Alert>Only administrators and members of {studyId} may see its files.</Alert>}
      {files.error && !forbidden && <Alert>Could not load the files: {messageOf(files.error)}</Alert>}
      {files.loading && !files.data && <Loading what="files" />}
      {files.data && files.data.results.length === 0 && <Empty>No file in this study yet.</Empty>}
      {files.data?.results.map((f) => (
        <FileCard
          key={f.kf_id}
          file={f}
          generation={generation}
          canUpload={canUpload}
          onNewVersion={(list) => start(list, f.kf_id)}
        />
      ))}
    </section>
  );
}

function UploadPanel({ onFiles, uploads }: { onFiles: (files: FileList) => void; uploads: UploadItem[] }) {
  const input = useRef<HTMLInputElement>(null);
  const [over, setOver] = useState(false);
  const hintId = useId();
  return (
    <section class="panel" aria-labelledby={`${hintId}-title`}>
      <h2 id={`${hintId}-title`}>Upload</h2>
      {/* biome-ignore lint/a11y/noStaticElementInteractions: the drop target; the button inside is the keyboard path */}
      <div
        class={`dropzone${over ? ' dropzone-over' : ''}`}
        data-testid="dropzone"
        onDragOver={(e) => {
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={(e) => {
          e.preventDefault();
          setOver(false);
          if (e.dataTransfer?.files.length) onFiles(e.dataTransfer.files);
        }}
      >
        <p id={hintId}>Drop files here, or</p>
        <button type="button" class="button" aria-describedby={hintId} onClick={() => input.current?.click()}>
          Choose files…
        </button>
        <input
          ref={input}
          type="file"
          multiple
          hidden
          onChange={(e) => {
            const list = e.currentTarget.files;
            if (list?.length) onFiles(list);
            e.currentTarget.value = '';
          }}
        />
        <p class="hint">
          Large files go up in parts, straight to storage; each file is checked against its SHA-256 (large
          ones show as verifying until that check is done).
        </p>
      </div>
      {uploads.length > 0 && (
        <ul class="uploads" aria-label="Uploads">
          {uploads.map((u) => {
            const pct = u.state.total ? (u.state.loaded / u.state.total) * 100 : 100;
            return (
              <li key={u.key} class={`upload upload-${u.state.phase}`} data-upload={u.name}>
                <div class="task-head">
                  <span class="task-name">{u.name}</span>
                  <span class="upload-phase">
                    {PHASE_LABEL[u.state.phase]}
                    {u.state.phase === 'uploading' && ` ${bytes(u.state.loaded)} of ${bytes(u.state.total)}`}
                  </span>
                </div>
                {u.state.phase !== 'failed' && (
                  <ProgressBar
                    value={u.state.phase === 'hashing' ? 0 : pct}
                    label={`Upload of ${u.name}: ${PHASE_LABEL[u.state.phase]}`}
                  />
                )}
                {u.state.error && <Alert>{u.state.error}</Alert>}
              </li>
            );
          })}
        </ul>
      )}
    </section>
  );
}

function FileCard({
  file,
  generation,
  canUpload,
  onNewVersion,
}: {
  file: StudyFile;
  generation: number;
  canUpload: boolean;
  onNewVersion: (files: FileList) => void;
}) {
  const { api } = useApp();
  const versions = usePolled(
    `versions ${file.kf_id}`,
    (init) =>
      api.files.GET('/files/{fileId}/versions', {
        params: { path: { fileId: file.kf_id }, query: { limit: 100 } },
        ...init,
      }),
    10_000,
  );
  const input = useRef<HTMLInputElement>(null);
  const titleId = useId();
  // A finished upload bumps `generation`: read the versions again at once.
  useEffect(() => versions.refresh(), [generation]);
  // A verifying version becomes available (or failed) once the file service has hashed it: look again sooner than
  // the usual poll while one is.
  const verifying = versions.data?.results.some((v) => v.state === 'verifying') ?? false;
  useEffect(() => {
    if (!verifying) return;
    const timer = setInterval(() => versions.refresh(), 2000);
    return () => clearInterval(timer);
  }, [verifying]);
  return (
    <section class="panel file" aria-labelledby={titleId} data-file={file.name}>
      <div class="file-head">
        <h2 id={titleId}>{file.name}</h2>
        <span class="sub">
          <code>{file.kf_id}</code> · added {when(file.created_at)} by {file.created_by}
        </span>
        {canUpload && (
          <>
            <button
              type="button"
              class="button button-small"
              onClick={() => input.current?.click()}
              aria-label={`New version of ${file.name}`}
            >
              New version
            </button>
            <input
              ref={input}
              type="file"
              hidden
              onChange={(e) => {
                const list = e.currentTarget.files;
                if (list?.length) onNewVersion(list);
                e.currentTarget.value = '';
              }}
            />
          </>
        )}
      </div>
      {file.description && <p>{file.description}</p>}
      {versions.error && <Alert>Could not load its versions: {messageOf(versions.error)}</Alert>}
      {versions.data && (
        <table class="table versions">
          <caption class="sr-only">Versions of {file.name}, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">Size</th>
              <th scope="col">SHA-256</th>
              <th scope="col">State</th>
              <th scope="col">Uploaded</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {versions.data.results.map((v) => (
              <VersionRow key={v.kf_id} version={v} api={api} />
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function VersionRow({ version: v, api }: { version: FileVersion; api: Api }) {
  const [signed, setSigned] = useState<{ url: string; expiresAt: string; copied: boolean } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [now, setNow] = useState(Date.now());
  const linkId = useId();
  useEffect(() => {
    if (!signed) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [signed]);

  const mint = async () => {
    const params = { path: { studyId: v.study_id, fileId: idOf(v.file), versionId: v.kf_id } };
    return must(api.files.POST('/signed-url/study/{studyId}/files/{fileId}/version/{versionId}', { params }));
  };
  const download = async () => {
    setError(null);
    try {
      // A single-use link needs no header, so the browser downloads it natively (S3 serves large files).
      const { url } = await mint();
      const a = document.createElement('a');
      a.href = url;
      a.download = v.file_name;
      a.rel = 'noopener';
      document.body.append(a);
      a.click();
      a.remove();
    } catch (err) {
      setError(`Could not download: ${messageOf(err)}`);
    }
  };
  const copy = async () => {
    setError(null);
    try {
      const { url, expires_at } = await mint();
      let copied = false;
      try {
        await navigator.clipboard.writeText(url);
        copied = true;
      } catch {
        // No clipboard permission: the link is shown, selected, for copying by hand.
      }
      setSigned({ url, expiresAt: expires_at, copied });
      setNow(Date.now());
    } catch (err) {
      setError(`Could not sign a URL: ${messageOf(err)}`);
    }
  };
  const left = signed ? secondsUntil(signed.expiresAt, now) : 0;
  return (
    <>
      <tr data-version={v.kf_id}>
        <td>
          <code>{v.kf_id}</code>
          <div class="sub">{v.file_name}</div>
        </td>
        <td>{bytes(v.size)}</td>
        <td>
          <code class="sha" title={v.sha256}>
            {v.sha256}
          </code>
        </td>
        <td>
          <StateBadge state={v.state} />
        </td>
        <td>
          {when(v.created_at)}
          <div class="sub">{v.uploaded_by}</div>
        </td>
        <td class="row-actions">
          {v.state === 'available' && (
            <>
              <button
                type="button"
                class="button button-small"
                onClick={download}
                aria-label={`Download ${v.file_name} (${v.kf_id})`}
              >
                Download
              </button>
              <button
                type="button"
                class="button button-small button-ghost"
                onClick={copy}
                aria-label={`Copy signed URL of ${v.file_name} (${v.kf_id})`}
              >
                Copy signed URL
              </button>
            </>
          )}
        </td>
      </tr>
      {(signed || error) && (
        <tr class="detail-row">
          <td colSpan={6}>
            {error && <Alert>{error}</Alert>}
            {signed && (
              <div class="signed">
                <label for={linkId}>Signed URL (single use)</label>
                <input
                  id={linkId}
                  type="text"
                  readOnly
                  value={signed.url}
                  onFocus={(e) => e.currentTarget.select()}
                />
                <p class="hint">
                  <span role="status">
                    {signed.copied ? 'Copied to the clipboard. ' : 'Select it to copy. '}
                  </span>
                  {left > 0
                    ? `Expires at ${time(signed.expiresAt)} (in ${left} s).`
                    : `Expired at ${time(signed.expiresAt)}.`}
                </p>
              </div>
            )}
          </td>
        </tr>
      )}
    </>
  );
}
