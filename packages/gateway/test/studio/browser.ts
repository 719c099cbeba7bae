/**
 * Browser support for Studio's end-to-end tests: Debian's Chromium driven
 * headless by playwright-core (no browser is ever downloaded), on loopback.
 *
 * Without /usr/bin/chromium the suites skip with a printed reason, except
 * under CI=true, where they fail (.ci/run installs Chromium first).
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type Browser, chromium, type Page } from "playwright-core"

export const CHROMIUM = "/usr/bin/chromium"

/** Whether the browser suites can run; throws under CI when they cannot. */
export const browserAvailable = (): boolean => {
  if (existsSync(CHROMIUM)) return true
  const reason = `Studio browser tests need Debian's Chromium at ${CHROMIUM} (apt-get install -y chromium)`
  if (process.env.CI) throw new Error(`${reason}; CI requires them`)
  console.warn(`SKIPPED: ${reason}`)
  return false
}

export const launch = (): Promise<Browser> =>
  chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // root in a container has no user namespace for Chromium's sandbox; the pages are our own, on loopback
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run"]
  })

/**
 * Every run takes every page's screenshot; the committed ones (docs/screenshots, referenced from
 * README.md) are rewritten only with UPDATE_SCREENSHOTS=1, so a test run leaves the work tree clean.
 */
export const screenshotDir = process.env.UPDATE_SCREENSHOTS === "1"
  ? fileURLToPath(new URL("../../../../docs/screenshots/", import.meta.url))
  : join(tmpdir(), "janus-studio-screenshots/")

export const screenshot = async (page: Page, name: string) => {
  mkdirSync(screenshotDir, { recursive: true })
  // let charts and live badges paint their final frame
  await page.waitForTimeout(100)
  await page.screenshot({ path: `${screenshotDir}${name}.png`, fullPage: true })
}

/** Collects uncaught page errors and console errors, so a test fails on them. */
export const watchErrors = (page: Page): Array<string> => {
  const errors: Array<string> = []
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`))
  page.on("console", (message) => {
    // failed requests the test provokes on purpose (401 after a revoke, aborted reconnects) are logged by Chromium
    if (message.type() === "error" && !/Failed to load resource|net::ERR_/.test(message.text())) {
      errors.push(`console: ${message.text()}`)
    }
  })
  return errors
}

/** Signs in on `page` with the keyboard only: Tab to the token field, type, Enter. */
export const signIn = async (page: Page, base: string, token: string, path = "/") => {
  await page.goto(`${base}${path}`)
  await page.getByRole("heading", { name: "Janus Studio" }).waitFor()
  await page.keyboard.press("Tab")
  await page.keyboard.type(token)
  await page.keyboard.press("Enter")
  await page.getByTestId("live-status").filter({ hasText: "Live" }).waitFor()
}

/** Clicks the main navigation link `name`. */
export const go = async (page: Page, name: string) => {
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true }).click()
  await page.getByRole("heading", { level: 1, name }).waitFor()
}

/** Studio's pages: path, and the heading each shows. */
export const PAGES: ReadonlyArray<readonly [string, string]> = [
  ["/", "Overview"],
  ["/connections", "Connections"],
  ["/tools", "Tools"],
  ["/virtual-servers", "Virtual servers"],
  ["/tokens", "Tokens"],
  ["/audit", "Audit"],
  ["/import", "OpenAPI import"],
  ["/configuration", "Configuration"],
  ["/settings", "Settings"]
]

/** How far the page scrolls sideways (0: not at all), and the widest elements if it does. */
export const horizontalOverflow = (page: Page): Promise<{ overflow: number; wide: Array<string> }> =>
  // a string: this package's TypeScript has no DOM types; the expression runs in the page
  page.evaluate(`(() => {
    const root = document.documentElement
    const width = root.clientWidth
    const wide = [...document.querySelectorAll("body *")]
      .filter((e) => {
        const r = e.getBoundingClientRect()
        return r.width > 0 && r.right > width + 1 && getComputedStyle(e).position !== "fixed"
      })
      .slice(0, 5)
      .map((e) => e.tagName.toLowerCase() + "." + e.className)
    return { overflow: root.scrollWidth - width, wide }
  })()`)

/** The focused element's `attribute` (and, with `closest`, that of its nearest ancestor matching it). */
export const focused = (page: Page, attribute: string, closest?: string): Promise<string | null> =>
  page.evaluate(
    `(() => { const e = document.activeElement; const t = ${
      closest === undefined ? "e" : `e?.closest(${JSON.stringify(closest)})`
    }; return t?.getAttribute(${JSON.stringify(attribute)}) ?? null })()`
  )

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

/**
 * axe-core's checks (WCAG 2.x A and AA, and best practices) on the page as it is: the serious and
 * critical violations, each with the elements it found. axe is evaluated through the DevTools protocol,
 * which Studio's Content-Security-Policy does not govern (the page itself still runs under it).
 */
export const axeViolations = async (page: Page) => {
  await page.evaluate(axeSource)
  const violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown }> }> =
    await page.evaluate(
      `axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] } })
        .then((result) => result.violations)`
    )
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) =>
      `${v.impact} ${v.id}: ${v.help} at ${v.nodes.slice(0, 3).map((n) => JSON.stringify(n.target)).join(", ")}`
    )
}
