/**
 * A lint for Amazon States Language (JSONPath) definitions: the rules AWS documents that asl-validator does not
 * check, plus the one difference between AWS and aws-local-stepfunctions that this project has to design around.
 *
 *   context-object    `$$` (the context object) only where AWS documents it: InputPath, OutputPath, ItemsPath,
 *                     a Choice rule's Variable, ResultSelector and Parameters. Anything else (ResultPath,
 *                     TimeoutSecondsPath, HeartbeatSecondsPath, a Wait's SecondsPath, ...) is a path into the state's
 *                     data, which AWS may refuse at deploy time or fail at run time with States.Runtime.
 *   path-resolves     every `$.…` reference in Parameters, a Choice's Variable and every *SecondsPath exists in the
 *                     data each state can receive (from the execution input's schema, the results the states
 *                     write, and the error objects a Catch writes). A path that is not there is a States.Runtime
 *                     failure, which no Catch handles.
 *   seconds-path      every TimeoutSecondsPath / HeartbeatSecondsPath resolves to a positive integer (a Wait's
 *                     SecondsPath to a non-negative one), on every way into the state.
 *   local-seconds-path  aws-local-stepfunctions resolves TimeoutSecondsPath / HeartbeatSecondsPath against the
 *                     effective parameters (after Parameters), AWS against the state input. So the path must name
 *                     a parameter copied from that very path, e.g. Payload.timeoutSeconds.$ = $.Payload.timeoutSeconds
 *                     read from state input that has $.Payload.timeoutSeconds: then both agree.
 *   callback-timeout  a `.waitForTaskToken` task has TimeoutSeconds or TimeoutSecondsPath (AWS waits a year
 *                     otherwise) and hands `$$.Task.Token` to someone in its Parameters.
 *   loop-counter      every loop of the state graph (Next, Choices, Default, Catch) passes through a counting state:
 *                     a Task that passes the step counter on and writes the counted result back. The code behind
 *                     it continues as a new execution once the counter reaches its limit.
 *   history-budget    the worst case of one execution stays under 25,000 history events: the way to the first
 *                     counting state, plus (limit + slack) times the costliest way from one counting state to the
 *                     next (or to the end), counting every event a state can write with all its retries.
 *   execution-age     the code hands over after `maxExecutionAgeSeconds`; that plus the longest way from one
 *                     counting state to the next (waits and timeouts at their maximum, retries included) stays
 *                     under a standard execution's one-year limit.
 *
 * Data shapes come from a JSON Schema (z.toJSONSchema of the input and of each task's result) and are followed
 * through the graph: Pass and Task results land at their ResultPath, a Catch adds {Error, Cause} at its ResultPath,
 * and where ways meet only what every way guarantees is kept.
 */

export interface Finding {
  rule:
    | 'context-object'
    | 'path-resolves'
    | 'seconds-path'
    | 'local-seconds-path'
    | 'callback-timeout'
    | 'loop-counter'
    | 'history-budget'
    | 'execution-age'
    | 'unsupported';
  state: string;
  message: string;
}

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  [k: string]: unknown;
}

export interface LintOptions {
  /** Schema of the input executions are started with. */
  input: JsonSchema;
  /** Schema of a Task's result, by its Resource string as written in the definition. */
  results?: Record<string, JsonSchema>;
  /**
   * The step counter: a counting state is a Task whose Parameters carry `parameter` = `path` and whose ResultPath
   * writes back to where `path` points from (e.g. rounds.$ = $.step.rounds with ResultPath $.step). `limitPath`
   * is where the input carries the limit; its schema's maximum bounds every execution.
   */
  counter: { parameter: string; path: string; limitPath: string; slack: number };
  /** The code hands over after this age (seconds). */
  maxExecutionAgeSeconds: number;
}

export const HISTORY_LIMIT = 25_000;
export const EXECUTION_LIMIT_SECONDS = 365 * 86_400;
/** Default MaxAttempts of a retrier, and a task's timeout when it sets none (AWS: 99999999 s). */
const DEFAULT_MAX_ATTEMPTS = 3;
const DEFAULT_TASK_TIMEOUT = 99_999_999;

/** Where AWS documents the context object (`$$`). */
const CONTEXT_FIELDS = new Set(['InputPath', 'OutputPath', 'ItemsPath', 'Variable']);
const CONTEXT_TEMPLATES = new Set(['Parameters', 'ResultSelector']);

// ---- shapes ------------------------------------------------------------------------------------------------------

type Shape =
  | { kind: 'object'; props: Record<string, Shape>; open: boolean }
  | { kind: 'integer' | 'number'; min: number; max: number }
  | { kind: 'string' | 'boolean' | 'null' | 'array' | 'unknown' };

const UNKNOWN: Shape = { kind: 'unknown' };

function fromSchema(schema: JsonSchema | undefined): Shape {
  if (!schema) return UNKNOWN;
  if (schema.anyOf) return schema.anyOf.map(fromSchema).reduce(meet);
  const type = Array.isArray(schema.type) ? undefined : schema.type;
  if (type === 'object' || schema.properties) {
    const required = new Set(schema.required ?? []);
    const props: Record<string, Shape> = {};
    for (const [k, v] of Object.entries(schema.properties ?? {}))
      if (required.has(k)) props[k] = fromSchema(v);
    return { kind: 'object', props, open: true };
  }
  if (type === 'integer' || type === 'number') {
    const min =
      schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum : -Infinity);
    return { kind: type, min, max: schema.maximum ?? Infinity };
  }
  if (type === 'string' || type === 'boolean' || type === 'null' || type === 'array') return { kind: type };
  if (schema.enum?.every((v) => typeof v === 'string')) return { kind: 'string' };
  if (typeof schema.const === 'string') return { kind: 'string' };
  return UNKNOWN;
}

function literal(value: unknown): Shape {
  if (typeof value === 'number')
    return { kind: Number.isInteger(value) ? 'integer' : 'number', min: value, max: value };
  if (typeof value === 'string') return { kind: 'string' };
  if (typeof value === 'boolean') return { kind: 'boolean' };
  if (value === null) return { kind: 'null' };
  if (Array.isArray(value)) return { kind: 'array' };
  if (typeof value === 'object')
    return {
      kind: 'object',
      props: Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, literal(v)])),
      open: false,
    };
  return UNKNOWN;
}

/** What two ways into a state both guarantee. */
function meet(a: Shape, b: Shape): Shape {
  if (a.kind === 'object' && b.kind === 'object') {
    const props: Record<string, Shape> = {};
    for (const k of Object.keys(a.props)) if (k in b.props) props[k] = meet(a.props[k], b.props[k]);
    return { kind: 'object', props, open: a.open || b.open };
  }
  if ((a.kind === 'integer' || a.kind === 'number') && (b.kind === 'integer' || b.kind === 'number'))
    return {
      kind: a.kind === 'integer' && b.kind === 'integer' ? 'integer' : 'number',
      min: Math.min(a.min, b.min),
      max: Math.max(a.max, b.max),
    };
  return a.kind === b.kind ? a : UNKNOWN;
}

const same = (a: Shape | undefined, b: Shape | undefined) => JSON.stringify(a) === JSON.stringify(b);

/** `$`, `$.a.b` -> ['a', 'b']; anything fancier (brackets, filters) -> null. */
function segments(path: string): string[] | null {
  if (path === '$') return [];
  if (!/^\$(\.[A-Za-z_][A-Za-z0-9_-]*)+$/.test(path)) return null;
  return path.slice(2).split('.');
}

/** The shape at a path; `missing` when the data may not have it. */
function resolve(shape: Shape, path: string): Shape | 'missing' | 'unsupported' {
  const segs = segments(path);
  if (!segs) return 'unsupported';
  let at: Shape = shape;
  for (const seg of segs) {
    if (at.kind === 'unknown') return UNKNOWN;
    if (at.kind !== 'object' || !(seg in at.props)) return 'missing';
    at = at.props[seg];
  }
  return at;
}

/** The data with `value` written at a ResultPath (`$` replaces it, `null` discards the value). */
function place(data: Shape, resultPath: string | null | undefined, value: Shape): Shape {
  if (resultPath === null) return data;
  const segs = segments(resultPath ?? '$');
  if (!segs) return UNKNOWN;
  const put = (at: Shape, rest: string[]): Shape => {
    if (rest.length === 0) return value;
    const base = at.kind === 'object' ? at : { kind: 'object' as const, props: {}, open: false };
    return {
      ...base,
      props: { ...base.props, [rest[0]]: put(base.props[rest[0]] ?? UNKNOWN, rest.slice(1)) },
    };
  };
  return put(data, segs);
}

/** The schema of a property, whether the input must carry it or not (a default applies when it does not). */
function schemaAt(schema: JsonSchema, path: string): JsonSchema | undefined {
  let at: JsonSchema | undefined = schema;
  for (const seg of segments(path) ?? []) at = at?.properties?.[seg];
  return at;
}

// ---- the lint ----------------------------------------------------------------------------------------------------

type State = Record<string, any>;

interface Edge {
  to: string;
  /** A Catch edge carries the error object to its ResultPath instead of the state's result. */
  catch?: { ResultPath?: string | null };
}

function edgesOf(state: State): Edge[] {
  const out: Edge[] = [];
  if (state.Next) out.push({ to: state.Next });
  for (const c of state.Choices ?? []) out.push({ to: c.Next });
  if (state.Default) out.push({ to: state.Default });
  for (const c of state.Catch ?? []) out.push({ to: c.Next, catch: { ResultPath: c.ResultPath } });
  return out;
}

export function lintAsl(definition: { StartAt: string; States: Record<string, State> }, opts: LintOptions) {
  const findings: Finding[] = [];
  const add = (rule: Finding['rule'], state: string, message: string) =>
    findings.push({ rule, state, message });
  const states = definition.States;
  const names = Object.keys(states);

  for (const [name, s] of Object.entries(states))
    if (s.Type === 'Map' || s.Type === 'Parallel')
      add('unsupported', name, `${s.Type} states are not modelled by this lint`);

  // context-object: walk every string value with the field names that lead to it.
  const walk = (name: string, value: unknown, trail: string[]) => {
    if (typeof value === 'string') {
      if (!value.startsWith('$$')) return;
      const field = trail[trail.length - 1];
      const inTemplate = trail.some((t) => CONTEXT_TEMPLATES.has(t)) && field?.endsWith('.$');
      if (!inTemplate && !CONTEXT_FIELDS.has(field))
        add(
          'context-object',
          name,
          `${trail.join('.')} reads the context object (${value}); AWS allows $$ only in InputPath, OutputPath, ItemsPath, Variable, ResultSelector and Parameters`,
        );
      return;
    }
    if (Array.isArray(value)) for (const v of value) walk(name, v, trail);
    else if (value && typeof value === 'object')
      for (const [k, v] of Object.entries(value)) walk(name, v, [...trail, k]);
  };
  for (const [name, s] of Object.entries(states)) walk(name, s, []);

  // callback-timeout
  for (const [name, s] of Object.entries(states)) {
    if (s.Type !== 'Task' || !String(s.Resource).endsWith('.waitForTaskToken')) continue;
    if (s.TimeoutSeconds === undefined && s.TimeoutSecondsPath === undefined)
      add(
        'callback-timeout',
        name,
        'a .waitForTaskToken task without TimeoutSeconds(Path) may wait for a year',
      );
    if (!JSON.stringify(s.Parameters ?? {}).includes('"$$.Task.Token"'))
      add('callback-timeout', name, 'passes no $$.Task.Token, so nobody can ever answer it');
  }

  // Data shapes, to a fixpoint: input[state] = meet of what every way in delivers.
  const input = new Map<string, Shape>([[definition.StartAt, fromSchema(opts.input)]]);
  const results = opts.results ?? {};
  const template = (tpl: unknown, data: Shape): Shape => {
    if (!tpl || typeof tpl !== 'object' || Array.isArray(tpl)) return literal(tpl);
    const props: Record<string, Shape> = {};
    for (const [k, v] of Object.entries(tpl as object)) {
      if (k.endsWith('.$')) {
        const key = k.slice(0, -2);
        if (typeof v !== 'string' || !v.startsWith('$') || v.startsWith('$$')) props[key] = UNKNOWN;
        else {
          const r = resolve(data, v);
          props[key] = r === 'missing' || r === 'unsupported' ? UNKNOWN : r;
        }
      } else props[k] = template(v, data);
    }
    return { kind: 'object', props, open: false };
  };
  const outputs = (name: string, data: Shape): { to: string; data: Shape }[] => {
    const s = states[name];
    return edgesOf(s).map((e) => {
      if (e.catch)
        return { to: e.to, data: place(data, e.catch.ResultPath, literal({ Error: '', Cause: '' })) };
      let result: Shape = data;
      if (s.Type === 'Pass')
        result =
          s.Parameters !== undefined
            ? template(s.Parameters, data)
            : s.Result !== undefined
              ? literal(s.Result)
              : data;
      else if (s.Type === 'Task') result = fromSchema(results[s.Resource]);
      const out = s.Type === 'Pass' || s.Type === 'Task' ? place(data, s.ResultPath, result) : data;
      return { to: e.to, data: out };
    });
  };
  for (let round = 0, changed = true; changed && round < 200; round++) {
    changed = false;
    for (const name of names) {
      const data = input.get(name);
      if (!data) continue;
      for (const { to, data: out } of outputs(name, data)) {
        const before = input.get(to);
        const after = before ? meet(before, out) : out;
        if (!same(before, after)) {
          input.set(to, after);
          changed = true;
        }
      }
    }
  }

  // path-resolves, seconds-path, local-seconds-path
  const checkPath = (name: string, field: string, path: string): Shape | null => {
    if (path.startsWith('$$')) return null; // context object: reported above where it is not allowed
    const data = input.get(name);
    if (!data) return null; // unreachable state
    const r = resolve(data, path);
    if (r === 'unsupported') add('path-resolves', name, `${field} ${path} is not a plain $.a.b path`);
    else if (r === 'missing')
      add('path-resolves', name, `${field} ${path} is not in every input this state can get`);
    else return r;
    return null;
  };
  const templatePaths = (name: string, tpl: unknown, trail: string) => {
    if (!tpl || typeof tpl !== 'object') return;
    for (const [k, v] of Object.entries(tpl as object)) {
      if (k.endsWith('.$') && typeof v === 'string') checkPath(name, `${trail}.${k}`, v);
      else templatePaths(name, v, `${trail}.${k}`);
    }
  };
  const choiceVariables = (name: string, rule: any) => {
    if (typeof rule?.Variable === 'string') checkPath(name, 'Variable', rule.Variable);
    for (const r of [...(rule?.And ?? []), ...(rule?.Or ?? []), ...(rule?.Not ? [rule.Not] : [])])
      choiceVariables(name, r);
  };
  for (const [name, s] of Object.entries(states)) {
    templatePaths(name, s.Parameters, 'Parameters');
    for (const c of s.Choices ?? []) choiceVariables(name, c);
    for (const field of ['TimeoutSecondsPath', 'HeartbeatSecondsPath', 'SecondsPath']) {
      const path = s[field];
      if (typeof path !== 'string') continue;
      const floor = field === 'SecondsPath' ? 0 : 1;
      if (path.startsWith('$$')) {
        add('seconds-path', name, `${field} ${path} is not a path into the state input`);
        continue;
      }
      const shape = checkPath(name, field, path);
      if (shape && (shape.kind !== 'integer' || shape.min < floor))
        add(
          'seconds-path',
          name,
          `${field} ${path} may not be an integer >= ${floor} (${JSON.stringify(shape)})`,
        );
      if (field !== 'SecondsPath' && s.Parameters !== undefined) {
        const segs = segments(path) ?? [];
        let at: any = s.Parameters;
        for (const seg of segs.slice(0, -1)) at = at?.[seg];
        if (at?.[`${segs[segs.length - 1]}.$`] !== path)
          add(
            'local-seconds-path',
            name,
            `${field} ${path} is not also a parameter copied from ${path}, so aws-local-stepfunctions (which reads it from the effective parameters) and AWS (the state input) disagree`,
          );
      }
    }
  }

  // loop-counter: with the counting states taken out, the graph must have no cycle.
  const counting = new Set(
    names.filter((n) => {
      const s = states[n];
      if (s.Type !== 'Task' || s.Parameters?.[opts.counter.parameter] !== opts.counter.path) return false;
      const written = segments(opts.counter.path)?.slice(0, -1).join('.');
      return s.ResultPath === `$.${written}`;
    }),
  );
  const next = (n: string) =>
    edgesOf(states[n])
      .map((e) => e.to)
      .filter((t) => t in states);
  const cycles: string[][] = [];
  const colour = new Map<string, 'grey' | 'black'>();
  const stack: string[] = [];
  const dfs = (n: string) => {
    colour.set(n, 'grey');
    stack.push(n);
    for (const t of next(n)) {
      if (counting.has(t)) continue;
      if (colour.get(t) === 'grey') cycles.push([...stack.slice(stack.indexOf(t)), t]);
      else if (!colour.has(t)) dfs(t);
    }
    stack.pop();
    colour.set(n, 'black');
  };
  for (const n of names) if (!counting.has(n) && !colour.has(n)) dfs(n);
  for (const c of new Set(cycles.map((c) => c.join(' -> '))))
    add(
      'loop-counter',
      c.split(' -> ')[0],
      `the loop ${c} passes no counting state (${opts.counter.parameter} = ${opts.counter.path}), so nothing makes it continue as a new execution`,
    );

  // history-budget and execution-age: costs of the ways between counting states (a DAG once they are cut).
  const limit = schemaAt(opts.input, opts.counter.limitPath)?.maximum ?? Infinity;
  if (counting.size > 0 && !Number.isFinite(limit))
    add('history-budget', definition.StartAt, `the input does not bound ${opts.counter.limitPath}`);

  const attempts = (s: State) =>
    1 + (s.Retry ?? []).reduce((sum: number, r: any) => sum + (r.MaxAttempts ?? DEFAULT_MAX_ATTEMPTS), 0);
  const events = (s: State): number => {
    if (s.Type === 'Fail') return 1;
    if (s.Type !== 'Task') return 2; // Entered, Exited
    // Per attempt: Scheduled, Started, Succeeded | Failed | TimedOut (+ Submitted for a callback).
    const perAttempt = String(s.Resource).endsWith('.waitForTaskToken') ? 4 : 3;
    return 2 + attempts(s) * perAttempt;
  };
  const maxOfPath = (name: string, path: string | undefined): number => {
    if (!path) return Infinity;
    const r = resolve(input.get(name) ?? UNKNOWN, path);
    return typeof r === 'object' && (r.kind === 'integer' || r.kind === 'number') ? r.max : Infinity;
  };
  const seconds = (name: string): number => {
    const s = states[name];
    if (s.Type === 'Wait') return s.Seconds ?? maxOfPath(name, s.SecondsPath);
    if (s.Type !== 'Task') return 0;
    const timeout =
      s.TimeoutSeconds ??
      (s.TimeoutSecondsPath ? maxOfPath(name, s.TimeoutSecondsPath) : DEFAULT_TASK_TIMEOUT);
    let backoff = 0;
    for (const r of s.Retry ?? []) {
      const n = r.MaxAttempts ?? DEFAULT_MAX_ATTEMPTS;
      for (let k = 0; k < n; k++)
        backoff += Math.min(
          (r.IntervalSeconds ?? 1) * (r.BackoffRate ?? 2) ** k,
          r.MaxDelaySeconds ?? Infinity,
        );
    }
    return attempts(s) * timeout + backoff;
  };
  const okNext = (n: string) =>
    edgesOf(states[n])
      .filter((e) => !e.catch)
      .map((e) => e.to)
      .filter((t) => t in states);
  const catchNext = (n: string) =>
    edgesOf(states[n])
      .filter((e) => e.catch)
      .map((e) => e.to)
      .filter((t) => t in states);
  /**
   * Costs of the ways between counts. From a counting state that succeeded, a way either reaches the next counting
   * state that succeeds (`count`: such ways repeat, once per step) or ends the execution (`end`: once). A counting
   * state that fails counts nothing: the way goes on through its Catch, paying for its attempts. A cycle on a way
   * makes it unbounded (Infinity); -Infinity means no such way.
   */
  type Ways = { count: number; end: number };
  const between = (cost: (n: string) => number) => {
    const memo = new Map<string, Ways>();
    const remember = (key: string, fn: () => Ways): Ways => {
      const known = memo.get(key);
      if (known) return known;
      memo.set(key, { count: Infinity, end: Infinity });
      const v = fn();
      memo.set(key, v);
      return v;
    };
    const best = (ways: Ways[], own: number): Ways => ({
      count: own + Math.max(-Infinity, ...ways.map((w) => w.count)),
      end: own + Math.max(-Infinity, ...ways.map((w) => w.end)),
    });
    const enter = (t: string): Ways => (counting.has(t) ? failing(t) : through(t));
    const through = (n: string): Ways =>
      remember(n, () => {
        const succ = next(n);
        return succ.length ? best(succ.map(enter), cost(n)) : { count: -Infinity, end: cost(n) };
      });
    const failing = (t: string): Ways =>
      remember(`fail:${t}`, () => {
        const failed = best(catchNext(t).map(enter), cost(t));
        return { count: Math.max(0, failed.count), end: failed.end };
      });
    const fromCounter = (c: string): Ways => best(okNext(c).map(enter), cost(c));
    const all = [...counting].map(fromCounter);
    return {
      start: enter(definition.StartAt),
      loop: Math.max(0, ...all.map((w) => w.count)),
      tail: Math.max(0, ...all.map((w) => w.end)),
    };
  };
  const ev = between((n) => events(states[n]));
  const sec = between(seconds);
  const steps = counting.size > 0 ? limit + opts.counter.slack : 0;
  // ExecutionStarted and ExecutionSucceeded | Failed | TimedOut | Aborted, the way to the first count, then
  // every step's way to the next, and the way out.
  const worst = 2 + Math.max(ev.start.end, ev.start.count + steps * ev.loop + ev.tail);
  if (!(worst <= HISTORY_LIMIT))
    add(
      'history-budget',
      definition.StartAt,
      `an execution may write ${worst} history events (${steps} steps of up to ${ev.loop}, ${ev.start.count} before the first, ${ev.tail} after the last); the limit is ${HISTORY_LIMIT}`,
    );
  // The code hands over at the first step after maxExecutionAgeSeconds: what follows is at most one way to the
  // next count and then the way out.
  const age = opts.maxExecutionAgeSeconds + sec.loop + sec.tail;
  if (!(age < EXECUTION_LIMIT_SECONDS))
    add(
      'execution-age',
      definition.StartAt,
      `an execution may run ${age} s (hand-over after ${opts.maxExecutionAgeSeconds} s, then up to ${sec.loop} s to the next step and ${sec.tail} s to the end); the limit is ${EXECUTION_LIMIT_SECONDS}`,
    );

  return {
    findings,
    /** The arithmetic, for the test to show. */
    budget: {
      limit,
      slack: opts.counter.slack,
      startEvents: ev.start.count,
      stepEvents: ev.loop,
      tailEvents: ev.tail,
      worst,
      stepSeconds: sec.loop,
      tailSeconds: sec.tail,
      age,
    },
  };
}
