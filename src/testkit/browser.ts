// Test-only: Debian's Chromium driven by playwright-core against the real app (the dashboard built first), a
// signed-in page for the seeded owner, a mailbox scene (mail over real SMTP, a browser signed in), and screenshots at desktop and phone widths into docs/screenshots.
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, request, TEST_PASSWORD, type TestApp } from './app.ts';
import { startInboundScene, type InboundScene } from './inbound.ts';
import { buildDashboard, isBuilt } from '../dashboard/build.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOTS = join(ROOT, 'docs/screenshots');
// Root needs --no-sandbox; the rest keeps Chromium from calling home (nothing outside loopback exists here).
const ARGS = ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-default-apps', '--disable-features=Translate,MediaRouter,OptimizationHints'];

export const DESKTOP = { width: 1366, height: 860 };
export const PHONE = { width: 390, height: 844 };

export async function openBrowser(): Promise<Browser> {
  if (!isBuilt()) await buildDashboard();
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}

/** A browser context signed in as `email` (its session cookie set from a real login over the API). */
export async function signedIn(browser: Browser, t: TestApp, email: string, password: string, viewport = DESKTOP): Promise<{ context: BrowserContext; page: Page; errors: Error[] }> {
  const res = await request(`${t.api}/auth/login`, { body: { email, password } });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(res.body)}`);
  const cookie = /service_session_v2=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')![1];
  const context = await browser.newContext({ viewport, colorScheme: 'light' });
  await context.addCookies([{ name: 'service_session_v2', value: cookie, url: t.url }]);
  const page = await context.newPage();
  // Uncaught errors in the app: a test asserts there were none.
  const errors: Error[] = [];
  page.on('pageerror', (err) => errors.push(err));
  return { context, page, errors };
}

/** A dashboard test's world: an inbound scene (mail over real SMTP) and Chromium signed in as its owner. */
export interface MailboxScene {
  browser: Browser;
  s: InboundScene;
  page: Page;
  /** Uncaught errors in the page: a test asserts there were none. */
  errors: Error[];
  stop(): Promise<void>;
}

export async function mailboxScene(opts?: Parameters<typeof startInboundScene>[0]): Promise<MailboxScene> {
  const browser = await openBrowser();
  try {
    const s = await startInboundScene(opts);
    const { page, errors } = await signedIn(browser, s.t, s.email, TEST_PASSWORD);
    return { browser, s, page, errors, stop: async () => void (await Promise.all([browser.close(), s.stop()])) };
  } catch (err) {
    await browser.close();
    throw err;
  }
}

/** The page now, at desktop and at phone width, as docs/screenshots/<name>-desktop.png and -phone.png. */
export async function screenshots(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const size = page.viewportSize()!;
  // After each resize, past the drawer's transition.
  await page.setViewportSize(DESKTOP);
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(SCREENSHOTS, `${name}-desktop.png`) });
  await page.setViewportSize(PHONE);
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(SCREENSHOTS, `${name}-phone.png`) });
  await page.setViewportSize(size);
}
