// The manual checkout provider (the default): no payment service at all. The checkout URL is a page of this
// box (billing/page-routes.ts) where the signed-in owner confirms the plan; confirming activates it.
import type { CheckoutProvider } from '../context.ts';

export const CHECKOUT_PAGE_PATH = '/billing/checkout';

/** The page of one checkout: the manual provider's confirmation, and where Stripe sends the browser back. */
export const checkoutPageUrl = (publicUrl: string, checkoutId: string) => `${publicUrl.replace(/\/+$/, '')}${CHECKOUT_PAGE_PATH}/${checkoutId}`;

export function manualProvider(publicUrl: string): CheckoutProvider {
  return {
    name: 'manual',
    checkout: async ({ checkoutId }) => ({ url: checkoutPageUrl(publicUrl, checkoutId), providerSessionId: null }),
  };
}
