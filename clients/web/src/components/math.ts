/** KaTeX for the markdown renderer, loaded on demand (its code, styles and fonts). */
import "katex/dist/katex.min.css";
import markedKatex from "marked-katex-extension";

export function mathExtension() {
  return markedKatex({ throwOnError: false, nonStandard: true });
}
