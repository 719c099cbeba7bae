// One formatter/linter: typescript-eslint for correctness, dprint (through
// @effect/eslint-plugin, Effect's own setup) for formatting. `pnpm lint:fix` formats.
import * as effectEslint from "@effect/eslint-plugin"
import tseslint from "typescript-eslint"

export default tseslint.config(
  {
    ignores: ["**/dist", "**/dist-js", "**/node_modules", ".toolchain", ".janus", "**/*.md", "**/dist-types"]
  },
  ...tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-namespace": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }]
    }
  }
)
