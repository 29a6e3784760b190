import { fromEnv } from '@aws-sdk/credential-provider-env';
import { fromHttp } from '@aws-sdk/credential-provider-http';

/**
 * The credential chain of a deployed function. The bundler puts it in place of the SDK's default chain
 * (`@aws-sdk/credential-provider-node`, see lib/bundling.ts), so every SDK client in a bundle uses it.
 *
 * Lambda hands a function its role's credentials in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN), and where it does not, through a container endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI);
 * the local stack and the tests set the environment too. The default chain would also try profiles, SSO, web
 * identity, processes and EC2 instance metadata, which a function never has, and they cost about 125 KB of every
 * bundle. The SDK caches and refreshes what this returns, as it does for the default chain.
 */
type Provider = ReturnType<typeof fromEnv>;

export function defaultProvider(init: Parameters<typeof fromEnv>[0] = {}): Provider {
  const env = fromEnv(init);
  const hasContainerEndpoint = () =>
    Boolean(
      process.env.AWS_CONTAINER_CREDENTIALS_FULL_URI || process.env.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI,
    );
  return async (props) => {
    try {
      return await env(props);
    } catch (err) {
      // fromHttp refuses to be built without its endpoint variable, so it is built only when one is set.
      if (hasContainerEndpoint()) return fromHttp(init)(props);
      throw err;
    }
  };
}
