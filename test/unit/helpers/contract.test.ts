import { describe, expect, it } from 'vitest';
import { checkExchange, type Recorded } from '#test/helpers/contract.js';

/** The contract check itself: it accepts an answer the document allows and names what is wrong with others. */
const json = (body: unknown) => Buffer.from(JSON.stringify(body));
const answer = (over: Partial<Recorded>): Recorded => ({
  api: 'coordinator',
  method: 'GET',
  path: '/studies/SD_00000001',
  requestHeaders: {},
  status: 200,
  headers: { 'Content-Type': 'application/json' },
  body: json({}),
  ...over,
});
const study = {
  item_id: 'SD_00000001',
  kf_id: 'SD_00000001',
  name: 'A study',
  version: null,
  visible: true,
  last_pub_version: null,
  last_pub_date: null,
  deleted: false,
  created_at: null,
};
const error = { error: { code: 'not_found', message: 'No such resource' } };

describe('the contract check', () => {
  it('accepts a declared status with a body of the declared schema', () => {
    expect(checkExchange(answer({ body: json(study) }))).toEqual({
      problems: [],
      exercised: 'coordinator GET /studies/{id}',
    });
  });

  it('refuses a body with a field the schema does not have, or without one it requires', () => {
    expect(checkExchange(answer({ body: json({ ...study, extra: 1 }) })).problems[0]).toMatch(
      /additional properties/,
    );
    const { name: _, ...nameless } = study;
    expect(checkExchange(answer({ body: json(nameless) })).problems[0]).toMatch(
      /must have required property 'name'/,
    );
  });

  it('refuses a status the route does not declare', () => {
    const { problems } = checkExchange(answer({ status: 409, body: json(error) }));
    expect(problems[0]).toMatch(
      /status 409 is not declared for coordinator GET \/studies\/\{id\} \(getStudy\)/,
    );
  });

  it('checks error answers against the error model, DRS routes against DRS’s', () => {
    expect(checkExchange(answer({ status: 404, body: json(error) })).problems).toEqual([]);
    expect(
      checkExchange(answer({ status: 404, body: json({ msg: 'x', status_code: 404 }) })).problems,
    ).toHaveLength(1);
    const drs = answer({ api: 'files', path: '/ga4gh/drs/v1/objects/FV_00000001', status: 404 });
    expect(
      checkExchange({ ...drs, body: json({ msg: 'No DRS object', status_code: 404 }) }).problems,
    ).toEqual([]);
    expect(checkExchange({ ...drs, body: json(error) }).problems).toHaveLength(1);
  });

  it('matches static path segments before parameters', () => {
    const x = answer({ api: 'files', method: 'POST', path: '/ga4gh/drs/v1/objects/access', status: 413 });
    expect(checkExchange({ ...x, body: json({ msg: 'too many', status_code: 413 }) }).exercised).toBe(
      'files POST /ga4gh/drs/v1/objects/access',
    );
  });

  it('wants an empty body where none is declared, and the error body for unknown paths and methods', () => {
    const deleted = answer({ method: 'DELETE', path: '/events/EV_00000001', body: json({ ok: true }) });
    expect(checkExchange(deleted).problems[0]).toMatch(/declared without a body/);
    expect(checkExchange(answer({ path: '/nowhere', status: 404, body: json(error) })).problems).toEqual([]);
    expect(checkExchange(answer({ path: '/nowhere', status: 200, body: json(error) })).problems[0]).toMatch(
      /undocumented route/,
    );
    expect(checkExchange(answer({ method: 'PUT', status: 405, body: json(error) })).problems).toEqual([]);
  });
});
