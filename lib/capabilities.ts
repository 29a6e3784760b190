import { releaseStepTimeoutSeconds } from '#functions/orchestration/config.js';
import type { Settings } from './settings.js';

/**
 * What a function may do beyond the tables its manifest entry names, keyed by manifest name. Kept next to the
 * manifests rather than in them because these are IAM decisions, not routing: a function not listed here gets
 * table access and log writes only. Functions that write the coordinator table write events, and so may also
 * publish them (see CoordinatorStack).
 */
export interface Capabilities {
  /** StartExecution / SendTaskSuccess / SendTaskFailure on the release state machine, DescribeExecution on its executions. */
  orchestration?: boolean;
  /** Calls task services with the coordinator's own client-credentials token, so reads the client secret. */
  coordinatorToken?: boolean;
  /** Registers task services: every service must be bound to its client (TASK_SERVICE_CLIENT_REQUIRED). */
  registersServices?: boolean;
  /**
   * Holds the only grant to create and delete the pool's app clients (the service-client gate), and reads and writes
   * its own client records (the coordinator table's SCLIENT# keys), which every other role is refused.
   */
  serviceClients?: boolean;
  /**
   * Objects of the study files bucket: `read` serves and presigns downloads, `readwrite` also uploads (single and
   * multipart) and deletes. Presigned URLs act with the signing function's rights, so these bound them too.
   */
  filesBucket?: 'read' | 'readwrite' | 'verify';
  /**
   * Invoked workers of lib/orchestration-manifest.ts (FILES_WORKERS, COORDINATOR_INVOKED_WORKERS) this function calls,
   * by name: it may invoke them and gets their names (`nameEnv`).
   */
  invokes?: string[];
  /**
   * Calls task services (or the dataservice), so runs in the `vpc` setting's private subnets when there is one, with
   * TASK_SERVICE_NETWORKS (lib/network.ts).
   */
  taskServiceNetwork?: boolean;
}

export const CAPABILITIES: Record<string, Capabilities> = {
  // POST /releases starts the execution; DELETE and /publish wake it (and start one if none runs).
  Releases: { orchestration: true },
  // PATCH /tasks/<id> wakes the poll loop when a task reports staged, published or failed.
  Tasks: { orchestration: true },
  // On the coordinator table's stream: wakes the poll loop of a release whose tasks all reached the phase's end.
  PhaseWatch: { orchestration: true },
  // Stores its task token, or answers it at once when a wake is already latched.
  PollWait: { orchestration: true },
  // Probes GET /status; at the failure threshold it fails releases and wakes their executions.
  HealthCheck: { orchestration: true, coordinatorToken: true, taskServiceNetwork: true },
  // Every minute: starts an execution for each release that is not terminal and has none running; re-delivers a
  // wake that failed.
  Reconciler: { orchestration: true },
  // POST/PATCH /task-services probe GET {url}/status with the coordinator's token; POST (create_client) and DELETE
  // ask the gate to make and remove each service's app client, and to replace its secret when it is quarantined. A
  // quarantine fails the service's tasks and drives their releases to their end (wakes, or starts, their executions).
  TaskServices: {
    coordinatorToken: true,
    registersServices: true,
    invokes: ['ServiceClientGate'],
    taskServiceNetwork: true,
    orchestration: true,
  },
  // Makes and deletes the task services' app clients, of the scope coordinator/service only, and only those it made;
  // replaces the secret of one it made (a quarantine).
  ServiceClientGate: { serviceClients: true },
  // Sends initialize/start/get_status/publish/cancel to every task service; continues a long-running release in a
  // fresh execution (StartExecution) before it reaches the execution history limit.
  ReleaseStep: { coordinatorToken: true, orchestration: true, taskServiceNetwork: true },
  // Reads the studies from the dataservice (STUDIES_SOURCE), which may be an internal service like a task service.
  StudySync: { taskServiceNetwork: true },
  // GET /download/...: small objects through the function, larger ones by a 302 to a presigned GET.
  FilesDownload: { filesBucket: 'read' },
  // Uploads (presigned PUT, multipart), confirmation (HeadObject with checksums), deletion of files and versions;
  // a confirmed multipart upload is handed to the verification worker.
  Files: { filesBucket: 'readwrite', invokes: ['VerifyUpload'] },
  // Streams the object to hash it (GetObject) and deletes it when it does not match (DeleteObject).
  VerifyUpload: { filesBucket: 'verify' },
  // GA4GH DRS access URLs: presigned GETs, signed with this function's rights.
  FilesDrs: { filesBucket: 'read' },
};

export const capabilitiesOf = (name: string): Capabilities => CAPABILITIES[name] ?? {};

/**
 * Lambda timeouts. HTTP functions stay under API Gateway's 30 s integration limit. A ReleaseStep round sends one
 * action to every task concurrently and, on a failure, cancel to all the others, each bounded by the action timeout.
 */
export function timeoutSecondsOf(name: string, kind: 'http' | 'worker', s: Settings): number {
  if (kind === 'http') return 29;
  // Lambda's maximum: the budget for hashing one uploaded object (docs/files.md says how large that can be).
  if (name === 'VerifyUpload') return 900;
  switch (name) {
    case 'ReleaseStep':
      // The worst round the settings allow: every wave of actions over the largest release at its action timeout
      // (functions/orchestration/config.ts; the settings refuse a round that would not fit in a Lambda). The ASL
      // gives each ReleaseStep state more than Lambda's maximum, so this timeout is the one that ends a step.
      return releaseStepTimeoutSeconds({
        actionTimeoutSeconds: s.actionTimeoutSeconds,
        concurrency: s.actionConcurrency,
      });
    case 'StudySync':
      return 300;
    case 'HealthCheck':
    case 'Reconciler':
      return 120;
    default:
      return 60;
  }
}
