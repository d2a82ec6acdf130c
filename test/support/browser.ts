// Browser end-to-end support: Debian's chromium driven by playwright-core (no browser download),
// headless and quiet, screenshots saved under test/artifacts/e2e/, and a tiny merchant site that
// plays the store's success and cancel pages.
import { existsSync, mkdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { freePort } from '../../temporal-dev/servers';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS_DIR = join(process.cwd(), 'test', 'artifacts', 'e2e');

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`no browser at ${CHROMIUM_PATH}: install Debian's chromium (apt-get install -y chromium) or set CHROMIUM_PATH`);
  }
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS_DIR, `${name}.png`), fullPage: true });
}

export interface MerchantSite {
  url: string;
  /** Paths the browser landed on, in order. */
  visits: string[];
  close(): Promise<void>;
}

/** The store's own site: answers any path with a small page naming it. */
export async function startMerchantSite(): Promise<MerchantSite> {
  const visits: string[] = [];
  const server = http.createServer((req, res) => {
    visits.push(req.url ?? '/');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html lang="en"><title>Merchant</title><h1 id="merchant">Merchant page ${req.url?.split('?')[0]}</h1></html>`);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    visits,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
