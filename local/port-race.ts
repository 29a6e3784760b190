/**
 * A stack on free ports (the tests' stacks, `npm run demo`) gets them by probing and letting them go, so the stack
 * can bind them. Another process may take one in between; the stack then refuses to start and names the port. A
 * start that failed that way is worth another try on new ports; any other failure is not.
 */
export async function withFreshPorts<T>(start: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= attempts || !/is already in use/.test(String((err as Error)?.message))) throw err;
    }
  }
}
