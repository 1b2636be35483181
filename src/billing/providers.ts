// Builds the checkout provider `billing_provider` names, for app.ts to put in the App (context.ts
// CheckoutProvider): manual, or Stripe with the configured key, API base URL and the safe-fetch policy.
import type { Resolver } from 'node:dns/promises';
import type { Config } from '../config/config.ts';
import type { CheckoutProvider } from '../context.ts';
import { manualProvider } from './manual.ts';
import { stripeProvider } from './stripe.ts';

export function createCheckoutProvider(config: Config, deps: { resolver: Resolver; fetchCa?: string }): CheckoutProvider {
  if (config.billingProvider === 'manual') return manualProvider(config.publicUrl);
  if (!config.stripeSecretKey) throw new Error('billing_provider "stripe" needs stripe_secret_key'); // config/config.ts refuses this at load
  return stripeProvider({
    apiUrl: config.stripeApiUrl,
    secretKey: config.stripeSecretKey,
    publicUrl: config.publicUrl,
    fetch: { resolver: deps.resolver, allowPrivate: config.allowPrivateFetch, ca: deps.fetchCa },
    allowPrivate: config.allowPrivateFetch,
  });
}
