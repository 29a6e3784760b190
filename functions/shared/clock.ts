/** Time as a port, so expiry and timeouts are testable with a clock the test controls. */
export interface Clock {
  /** Milliseconds since the epoch, fractional (microsecond resolution where the platform has it). */
  nowMs(): number;
}

export const systemClock: Clock = {
  nowMs: () => performance.timeOrigin + performance.now(),
};

/** ISO 8601 UTC with microseconds and a trailing Z, e.g. 2018-09-13T19:48:49.467518Z. */
export function isoMicros(ms: number): string {
  const whole = Math.floor(ms);
  const micros = Math.min(999, Math.floor((ms - whole) * 1000));
  const base = new Date(whole).toISOString(); // 2018-09-13T19:48:49.467Z
  return `${base.slice(0, -1)}${String(micros).padStart(3, '0')}Z`;
}

export function nowIso(clock: Clock = systemClock): string {
  return isoMicros(clock.nowMs());
}

/** A clock for tests: starts at `start` and moves only when told to. */
export class FakeClock implements Clock {
  constructor(private ms = Date.UTC(2026, 0, 1)) {}
  nowMs(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
}
