// The docs pages in a real headless Chromium (Debian's `chromium`, driven by puppeteer-core) against a gateway started
// in-process on 127.0.0.1: Swagger UI renders the operations of /openapi.json, the JSON-RPC page lists the core
// methods of both lines and the extension methods, no request leaves 127.0.0.1, nothing breaks the CSP, and
// screenshots land in test-output/ (gitignored).
//
// The browser: CHROME_PATH, else /usr/bin/chromium (.ci/chromium.sh installs it). Missing with CI=true the test fails;
// missing locally it is skipped with a message saying so.
import fs from "node:fs";
import path from "node:path";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packageRoot } from "../../src/contract/catalog.js";
import { startGateway, type StartedGateway } from "../support/gateway.js";
import { catalog } from "../support/contract.js";

const chromePath = process.env.CHROME_PATH || "/usr/bin/chromium";
const haveChrome = fs.existsSync(chromePath);
const inCi = process.env.CI === "true";
const outDir = path.join(packageRoot, "test-output");

if (!haveChrome && !inCi)
  console.warn(`test/browser/docs.test.ts skipped: no Chromium at ${chromePath} (set CHROME_PATH, or run .ci/chromium.sh as root)`);

interface Visit {
  /** Every URL the page asked for (documents, scripts, styles, images, fetches). */
  requests: string[];
  /** Requests for another host than 127.0.0.1: aborted, and the test fails. */
  offHost: string[];
  errors: string[];
}

async function openPage(browser: Browser): Promise<{ page: Page; visit: Visit }> {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 1000 });
  const visit: Visit = { requests: [], offHost: [], errors: [] };
  await page.setRequestInterception(true);
  page.on("request", (req) => {
    const url = new URL(req.url());
    if (url.protocol === "data:" || url.protocol === "blob:") return void req.continue();
    visit.requests.push(req.url());
    if (url.hostname !== "127.0.0.1") {
      visit.offHost.push(req.url());
      return void req.abort();
    }
    return void req.continue();
  });
  page.on("pageerror", (err) => visit.errors.push(`pageerror: ${String(err)}`));
  page.on("console", (msg) => {
    if (msg.type() === "error") visit.errors.push(`console: ${msg.text()}`);
  });
  // CSP violations are reported to the page; collect them.
  await page.evaluateOnNewDocument(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      const w = window as unknown as { __csp?: string[] };
      (w.__csp ??= []).push(`${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  return { page, visit };
}

async function cspViolations(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { __csp?: string[] }).__csp ?? []);
}

function expectLocalOnly(visit: Visit, url: string): void {
  expect(visit.offHost, "requests that left 127.0.0.1").toEqual([]);
  expect(visit.requests.length).toBeGreaterThan(0);
  for (const r of visit.requests) expect(new URL(r).hostname, r).toBe("127.0.0.1");
  expect(visit.requests.every((r) => r.startsWith(url)), visit.requests.join("\n")).toBe(true);
}

describe.skipIf(!haveChrome && !inCi)("docs pages in headless Chromium", () => {
  let gw: StartedGateway;
  let browser: Browser;
  beforeAll(async () => {
    if (!haveChrome) throw new Error(`CI=true but no Chromium at ${chromePath}: run .ci/chromium.sh (or set CHROME_PATH)`);
    fs.mkdirSync(outDir, { recursive: true });
    gw = await startGateway();
    browser = await puppeteer.launch({
      executablePath: chromePath,
      headless: true,
      // Chromium refuses to start as root with its sandbox on (the sandbox needs an unprivileged user); CI containers
      // and this machine run tests as root, so only then is it turned off. The page is our own, served on 127.0.0.1.
      args: [...(process.getuid?.() === 0 ? ["--no-sandbox"] : []), "--disable-dev-shm-usage", "--disable-gpu"],
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await gw?.close();
  });

  it("/docs renders the OpenAPI operations (message:send among them) from this gateway alone", async () => {
    const { page, visit } = await openPage(browser);
    const res = await page.goto(`${gw.url}/docs`, { waitUntil: "load" });
    expect(res?.status()).toBe(200);
    await page.waitForSelector(".opblock .opblock-summary-path", { timeout: 45_000 });
    const paths = await page.$$eval(".opblock .opblock-summary-path", (els) => els.map((e) => e.getAttribute("data-path") ?? e.textContent ?? ""));
    const restRoutes = catalog.routes.filter((r) => r.kind === "a2a");
    expect(paths).toContain("/message:send");
    expect(paths).toContain("/v1/message:send");
    expect(paths.length).toBeGreaterThanOrEqual(restRoutes.length);
    const opIds = await page.$$eval(".opblock-summary-operation-id", (els) => els.map((e) => e.textContent ?? ""));
    expect(opIds.some((id) => /sendMessage/i.test(id))).toBe(true);
    await page.screenshot({ path: path.join(outDir, "docs.png"), fullPage: false });
    // Open message:send, as a reader would, and look at it.
    await page.click('.opblock-post [data-path="/message:send"]');
    await page.waitForSelector(".opblock.is-open", { timeout: 15_000 });
    await page.screenshot({ path: path.join(outDir, "docs-message-send.png"), fullPage: false });
    expect(await cspViolations(page)).toEqual([]);
    expect(visit.errors).toEqual([]);
    expectLocalOnly(visit, gw.url);
    expect(visit.requests.some((r) => r.startsWith(`${gw.url}/openapi.json`))).toBe(true);
    await page.close();
  }, 90_000);

  it("/docs/jsonrpc (linked from /docs) shows SendMessage, message/send and the extension methods", async () => {
    const { page, visit } = await openPage(browser);
    await page.goto(`${gw.url}/docs`, { waitUntil: "load" });
    // Waited for by what it leads to: Swagger UI's own in-page navigations can settle a waitForNavigation first.
    await page.click('.docs-nav a[href="/docs/jsonrpc"]');
    await page.waitForFunction(() => location.pathname === "/docs/jsonrpc" && document.readyState === "complete", { timeout: 30_000 });
    expect(page.url()).toBe(`${gw.url}/docs/jsonrpc`);
    const methods = await page.$$eval("article[data-method]", (els) => els.map((e) => e.getAttribute("data-method")));
    expect(methods).toContain("SendMessage");
    expect(methods).toContain("message/send");
    expect(methods).toContain("opencode.sessions.list");
    expect(methods.sort()).toEqual(catalog.methods.map((m) => m.name).sort());
    const heading = await page.$eval('article[data-method="opencode.sessions.list"] h3', (e) => e.textContent);
    expect(heading).toBe("opencode.sessions.list");
    // Rendered, not hidden: the stylesheet loaded and the method box is laid out.
    const box = await page.$eval('article[data-method="SendMessage"]', (e) => {
      const r = e.getBoundingClientRect();
      return { height: r.height, border: getComputedStyle(e).borderTopStyle };
    });
    expect(box.height).toBeGreaterThan(100);
    expect(box.border).toBe("solid");
    await page.$eval('article[data-method="SendMessage"]', (e) => e.scrollIntoView());
    await page.screenshot({ path: path.join(outDir, "docs-jsonrpc.png"), fullPage: false });
    expect(await cspViolations(page)).toEqual([]);
    expect(visit.errors).toEqual([]);
    expectLocalOnly(visit, gw.url);
    await page.close();
  }, 90_000);
});
