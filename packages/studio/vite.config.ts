/**
 * Studio's build: one hashed JS and one CSS bundle under dist/assets, no
 * inline script (the gateway's Content-Security-Policy forbids it), no
 * module-preload polyfill (it would be inline), nothing fetched at run time.
 */
import { defineConfig } from "vite"

export default defineConfig({
  root: import.meta.dirname,
  base: "/",
  // public/: files copied as they are (the favicon)
  publicDir: "public",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: "es2022"
  },
  logLevel: "warn"
})
