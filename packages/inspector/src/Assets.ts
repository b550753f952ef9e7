// The state visualizer's files, served by the http package under /inspector/. Its libraries
// (Mermaid for statecharts, the Action Cable client for live steps) come from node_modules, so
// the page needs no external asset.
import { createRequire } from "node:module"
import { dirname, join } from "node:path"

const require = createRequire(import.meta.url)
const packageDir = (name: string) => dirname(require.resolve(`${name}/package.json`))

export interface Asset {
  readonly path: string
  readonly contentType: string
}

export const inspectorAssets: Readonly<Record<string, Asset>> = {
  "app.js": {
    path: new URL("./public/app.js", import.meta.url).pathname,
    contentType: "text/javascript; charset=utf-8"
  },
  "style.css": {
    path: new URL("./public/style.css", import.meta.url).pathname,
    contentType: "text/css; charset=utf-8"
  },
  "mermaid.min.js": {
    path: join(packageDir("mermaid"), "dist", "mermaid.min.js"),
    contentType: "text/javascript; charset=utf-8"
  },
  "actioncable.esm.js": {
    path: join(packageDir("@rails/actioncable"), "app", "assets", "javascripts", "actioncable.esm.js"),
    contentType: "text/javascript; charset=utf-8"
  }
}
