/**
 * Every list's `count` set against what paging through it finds, for the tests and benchmarks that check counts
 * after many writes (a migration, concurrent callbacks). `call` is any GET against the coordinator API that answers
 * the parsed body; the lists are derived from what paging the unfiltered lists finds, so every release, task, task
 * service and study that has records gets its own filters checked.
 */
export type Get = (path: string) => Promise<any>;

/** Every item of a list, following its `next` links 100 at a time. */
export async function pageAll(get: Get, path: string): Promise<{ count: number; items: any[] }> {
  const sep = path.includes('?') ? '&' : '?';
  let body = await get(`${path}${sep}limit=100`);
  const count = body.count as number;
  const items: any[] = [...body.results];
  while (body.next) {
    const next = new URL(body.next as string);
    body = await get(`${next.pathname}${next.search}`);
    items.push(...body.results);
  }
  return { count, items };
}

export interface CountCheck {
  path: string;
  count: number;
  paged: number;
}

/** The lists whose counts the coordinator keeps, one per filter value found in the data. */
export async function countedLists(get: Get): Promise<string[]> {
  const [events, tasks, releases] = await Promise.all([
    pageAll(get, '/events'),
    pageAll(get, '/tasks'),
    pageAll(get, '/releases'),
  ]);
  // References are URLs (…/task-services/<id>); ids are their last segment.
  const idOf = (v: unknown) => (typeof v === 'string' ? v.split('/').pop() : undefined);
  const ids = (xs: any[], key: string) =>
    [...new Set(xs.map((x) => idOf(x[key])))].filter((v): v is string => typeof v === 'string');
  const releaseIds = ids(releases.items, 'kf_id');
  const studies = [...new Set(releases.items.flatMap((r) => r.studies ?? []))] as string[];
  const services = [...new Set([...ids(tasks.items, 'task_service'), ...ids(events.items, 'task_service')])];
  const states = [...new Set(tasks.items.map((t) => t.state))] as string[];
  return [
    '/events',
    ...releaseIds.map((r) => `/events?release=${r}`),
    ...studies.map((s) => `/events?study=${s}`),
    ...releaseIds.flatMap((r) => studies.map((s) => `/events?release=${r}&study=${s}`)),
    ...services.map((s) => `/events?task_service=${s}`),
    ...tasks.items.flatMap((t) => [
      `/events?task=${t.kf_id}`,
      `/events?task=${t.kf_id}&release=${idOf(t.release)}`,
    ]),
    '/tasks',
    ...states.map((s) => `/tasks?state=${s}`),
    ...services.map((s) => `/tasks?task_service=${s}`),
    '/releases',
    ...[...new Set(releases.items.map((r) => r.state))].map((s) => `/releases?state=${s}`),
    ...studies.map((s) => `/releases?study=${s}`),
    '/task-services',
    '/release-notes',
  ];
}

/** Each list's count and what paging through it found; equal for every list when the counts are exact. */
export async function checkCounts(get: Get, lists?: string[]): Promise<CountCheck[]> {
  const paths = lists ?? (await countedLists(get));
  const out: CountCheck[] = [];
  for (const path of paths) {
    const { count, items } = await pageAll(get, path);
    out.push({ path, count, paged: items.length });
  }
  return out;
}

/** The checks whose count differs from what paging found. */
export const wrongCounts = (checks: CountCheck[]) => checks.filter((c) => c.count !== c.paged);
