import type { IncomingHttpHeaders } from 'node:http';
import type {
  AuthOptions,
  CallbackOutcome,
  Secrets,
  StoredTask,
  TaskAction,
} from '#packages/task-service/src/index.js';

/** The five actions of the task-service API. */
export type FakeAction = TaskAction;

/** Which requests of an action a fault hits, counted per task: the first one, or every later one (default: all). */
export type When = 'first' | 'repeat';

/**
 * How the fake answers a request, in place of (or on top of) the kit's answer:
 *
 *   'ok'        the kit's answer
 *   'hang'      no answer at all, so the caller's timeout ends the request (time out at an action)
 *   'reset'     the connection is destroyed
 *   'not_json'  200 with a body that is not JSON (bad JSON at an action)
 *   {status}    that status, with Retry-After when given (fail at an action; with `flaky`, a transient 503); the
 *               action is not carried out
 *   {state}     the action is carried out and its 200 answer names this state instead (a state that is not a valid
 *               next one); with `act: false` it is not carried out, and the task is answered as it is
 *   {json}      200 with this body, the action not carried out (GET /status without a name, say)
 */
export type Fault =
  | 'ok'
  | 'hang'
  | 'reset'
  | 'not_json'
  | { status: number; retryAfter?: string; when?: When }
  | { state: string; act?: boolean; when?: When }
  | { json: unknown; when?: When };

/** The service's own token for its callbacks: a string, or the kit's token source (refreshed on a 401). */
export type CallbackToken = (() => string | null | Promise<string | null>) & { invalidate?: () => void };

/** Defects of a service that otherwise follows the contract, one rule each (the conformance check's tests). */
export interface Quirks {
  /** Tokens are verified (signature, issuer, expiry) but not their audience. Needs `auth` in jwks mode. */
  anyAudience?: boolean;
  /** Signatures are verified, but a replayed webhook-id is taken. */
  acceptReplays?: boolean;
  /** An action for a task never initialized answers 200 pending instead of 404. */
  acceptUnknownTasks?: boolean;
  /** An unknown action is answered as get_status instead of refused (400). */
  unknownActionAsStatus?: boolean;
  /** Fields added to every callback's body. */
  callbackExtra?: Record<string, unknown>;
  /**
   * Cancel is answered and recorded (get_status says canceled), but the timed work goes on to its end and reports
   * it by callback anyway.
   */
  ignoreCancel?: boolean;
  /** A task's publish work fails when it runs a second time (a restart mid-publish runs it again). */
  publishOnce?: boolean;
}

export interface FakeTaskServiceOptions {
  name?: string;
  /**
   * The host the coordinator calls this service at (default 127.0.0.1). Any other makes it listen on every
   * interface, e.g. for a coordinator in a container that reaches this machine as host.docker.internal.
   */
  host?: string;

  /** ms from start to staged; 0 (default): done before start answers, which says `staged`; Infinity: never. */
  stageMs?: number;
  /** ms from publish to published, as stageMs. */
  publishMs?: number;
  /**
   * Staging ends at this get_status instead of after a time (1: the first poll after start finds it staged); each
   * earlier poll raises its progress by 100 / stagePolls.
   */
  stagePolls?: number;
  /** Publishing ends at this get_status after publish, as stagePolls. */
  publishPolls?: number;
  /** Pieces of timed work, each but the last followed by a progress callback (default 1: none). */
  progressSteps?: number;
  /** The staging fails (reported `failed`) instead of staging. */
  failStaging?: boolean;

  /** Where callbacks go, and with which token. Without it the service only answers polls. */
  coordinator?: { url: string; token: CallbackToken };
  /** Report each end of work with PATCH /tasks/<id> (default true); false: by poll alone. */
  callbacks?: boolean;
  /** Multiplies the pause before a callback is sent again (Retry-After, or the kit's backoff); default 1. */
  retryAfterScale?: number;

  /** The coordinator's token, checked by the kit (default: not checked). */
  auth?: AuthOptions;
  /** The service's signing secrets, checked by the kit (default: signatures are not checked). */
  signingSecrets?: Secrets;

  /** How GET /status is answered (default ok); `fake.status` changes it later. */
  status?: Fault;
  /** How each action is answered (default ok); `fake.actions` changes it later. */
  actions?: Partial<Record<FakeAction, Fault>>;
  /** The first `times` requests of an action are answered as `how`, whatever `actions` says. */
  flaky?: Partial<Record<FakeAction, { times: number; how: Fault }>>;
  /** Answer these actions only after this many ms. */
  delays?: Partial<Record<FakeAction, number>>;
  /** Stop listening right after answering this action: the next request finds the port closed. */
  refuseAfter?: FakeAction;
  /** Spell answers like older services: task_id without kf_id, "initialized" for pending, progress "NN%". */
  legacySpelling?: boolean;
  quirks?: Quirks;
  /** The kit's log lines (default: none). */
  log?: (line: string) => void;
}

/** Every request, as it arrived. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** Every action received (a POST /tasks naming one of the five actions, a task and a release). */
export interface ReceivedAction {
  action: FakeAction;
  taskId: string;
  releaseId: string;
  studies: unknown;
  authorization: string | undefined;
  /** The X-Request-Id the coordinator sent (its correlation id). */
  requestId: string | undefined;
  /** The body exactly as received, and the Standard Webhooks headers the coordinator signed it with. */
  raw: string;
  webhook: { 'webhook-id'?: string; 'webhook-timestamp'?: string; 'webhook-signature'?: string };
  at: number;
}

/**
 * Every callback sent (PATCH /tasks/<id>), once its sending is over: the coordinator's last status (0: no answer),
 * the time from the first attempt to that answer, how many attempts it took (409, 429 and 503 are sent again after
 * Retry-After, as the kit does), the kit's reading of the answer, and the body of a refusal.
 */
export interface CallbackRecord {
  taskId: string;
  state?: string;
  progress?: number;
  status: number;
  ms: number;
  attempts: number;
  outcome: CallbackOutcome;
  error?: string;
}

export interface FakeTaskService {
  name: string;
  url: string;
  /** How GET /status is answered from now on. */
  status: Fault;
  /** How each action is answered from now on. */
  actions: Partial<Record<FakeAction, Fault>>;
  requests: RecordedRequest[];
  received: ReceivedAction[];
  callbacks: CallbackRecord[];
  /** The kit's tasks, by id: a test may read them, or change one to play work that ends. */
  tasks: Map<string, StoredTask>;
  /** Actions received for a task, in order. */
  actionsFor(taskId: string): FakeAction[];
  /** Resolves when no work runs (every callback of ended work sent). */
  idle(): Promise<void>;
  /** Stops listening: connections are refused from now on (work already running goes on). */
  close(): Promise<void>;
  /** Stops everything: the work, the callbacks being sent again, and the listening. */
  stop(): Promise<void>;
  /**
   * As a kill and a restart of the process: the work stops where it is and the port closes; then a new service
   * over the same tasks listens on the same port and resumes the work that was going on.
   */
  restart(): Promise<void>;
}
