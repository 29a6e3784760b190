import type { Client } from 'openapi-fetch';
import type { components, paths } from '#openapi/types/files.js';

/**
 * What the upload core (clients/upload/) and the two sides that use it agree on. The core uses only what Node 22
 * and browsers both have (fetch through openapi-fetch, @noble/hashes, timers, AbortSignal, crypto.randomUUID), so
 * drc and the dashboard's Vite build take it as it is. Each side brings its I/O through UploadIo: how one PUT is
 * sent (a file stream over fetch in drc; XMLHttpRequest in a browser, the only way to see upload progress there),
 * how an API error becomes its own kind of error, and what progress looks like.
 */
export type FilesApi = Client<paths>;
type Schemas = components['schemas'];
export type Version = Schemas['Version'];
export type UploadStarted = Schemas['UploadStarted'];
export type SingleUpload = Schemas['SingleUpload'];

export interface PartEtag {
  part_number: number;
  etag: string;
}

/** The version an upload makes, and the file it belongs to. */
export interface Ids {
  fileId: string;
  versionId: string;
}

/** A failure of the upload itself (the storage refused a PUT, the service failed the verification). */
export class UploadError extends Error {
  constructor(
    message: string,
    /** The part the storage refused (a multipart upload can resume without it). */
    readonly part?: number,
  ) {
    super(message);
    this.name = 'UploadError';
  }
}

/** An openapi-fetch answer. */
export interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** One PUT of the bytes [start, start + length) of the file to a presigned URL. */
export interface PutRequest {
  url: string;
  /** The headers the URL's signature covers (a single PUT's declared SHA-256). */
  headers: Record<string, string>;
  start: number;
  length: number;
  signal?: AbortSignal;
}

export interface PutAnswer {
  status: number;
  etag: string | null;
  /** The answer's body (S3's XML error, when it refuses). */
  text: string;
}

export interface UploadProgress {
  phase: 'hashing' | 'uploading' | 'confirming' | 'verifying';
  /** Bytes hashed or stored so far, of `total` (both 0 while confirming and verifying). */
  loaded: number;
  total: number;
}

/** What each side brings. */
export interface UploadIo {
  files: FilesApi;
  /** The body of a successful API answer, or the side's own error for the others (`what` names the call). */
  must: <T>(call: Promise<Answer<T>>, what: string) => Promise<T>;
  /** Sends one PUT, reporting the bytes sent so far; rejects only when the request could not be made. */
  put: (req: PutRequest, onSent: (sent: number) => void) => Promise<PutAnswer>;
  onProgress?: (p: UploadProgress) => void;
  signal?: AbortSignal;
}

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
