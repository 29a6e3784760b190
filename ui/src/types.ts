/** The APIs' JSON shapes, as the dashboard reads them (the specs and docs/files.md name every field). */
export const RELEASE_STATES = [
  'initializing',
  'running',
  'staged',
  'publishing',
  'published',
  'canceling',
  'canceled',
  'failed',
] as const;
export type ReleaseState = (typeof RELEASE_STATES)[number];
export const TERMINAL_STATES: readonly string[] = ['published', 'canceled', 'failed'];

export interface Task {
  kf_id: string;
  state: string;
  progress: number;
  release: string;
  task_service: string;
  created_at: string;
  service_name: string;
}

export interface ReleaseNote {
  kf_id: string;
  description: string;
  author: string;
  created_at: string;
  release: string;
  study: string | null;
}

export interface Release {
  kf_id: string;
  name: string;
  description: string;
  notes: ReleaseNote[];
  state: string;
  studies: string[];
  tasks: Task[];
  version: string;
  created_at: string;
  tags: string[];
  author: string;
  is_major: boolean;
}

export interface CoordinatorEvent {
  kf_id: string;
  event_type: 'info' | 'warning' | 'error';
  message: string;
  release: string | null;
  task_service: string | null;
  task: string | null;
  created_at: string;
}

export interface TaskService {
  kf_id: string;
  name: string;
  description: string;
  author: string;
  url: string;
  enabled: boolean;
  health_status: string;
  last_ok_status: number;
  /** The OAuth client (or subject) whose tokens act for this service; null when any service token may. */
  client_id: string | null;
  created_at: string;
}

export interface Study {
  kf_id: string;
  name: string;
  version: string | null;
  visible: boolean;
  last_pub_version: string | null;
  last_pub_date: string | null;
  deleted: boolean;
  created_at: string | null;
}

export interface StudyFile {
  kf_id: string;
  study_id: string;
  name: string;
  description: string | null;
  created_at: string;
  created_by: string;
  versions: string;
  download_url: string;
}

export interface FileVersion {
  kf_id: string;
  file: string;
  study_id: string;
  file_name: string;
  size: number;
  content_type: string;
  sha256: string;
  /** verifying: a multipart upload whose SHA-256 the file service is still computing. */
  state: 'pending' | 'verifying' | 'available' | 'failed';
  created_at: string;
  uploaded_by: string;
  confirmed_at: string | null;
  download_url: string | null;
}

/** The last path segment of an absolute reference URL: its id. */
export const idOf = (ref: string | null) => (ref ? (ref.split('/').pop() ?? '') : '');
