import createDOMPurify from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import go from "highlight.js/lib/languages/go";
import graphql from "highlight.js/lib/languages/graphql";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { Marked } from "marked";
import { memo, useSyncExternalStore, type MouseEvent } from "react";

import { useToast } from "../toast";

// A handful of common languages (highlight.js core, so only these ship); a fence in any
// other language shows plain.
for (const [name, language] of Object.entries({ bash, css, go, graphql, javascript, json, python, rust, sql, typescript, xml, yaml })) {
  hljs.registerLanguage(name, language);
}
hljs.registerAliases(["sh", "shell", "zsh"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx", "mjs"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["yml"], { languageName: "yaml" });

// marked parses a streamed answer in a few hundredths of a millisecond, so the answer is
// parsed again on every delta without the parse showing in the time a token takes to
// reach the screen.
const escapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escape = (text: string) => text.replace(/[&<>"']/g, (c) => escapes[c] ?? c);

const marked = new Marked({
  gfm: true,
  renderer: {
    // Raw HTML in the text is never rendered: it shows as the text it is.
    html: ({ text }) => escape(text),
    // A code block: highlighted, with its language and a copy button above it.
    code: ({ text, lang }) => {
      const language = (lang ?? "").trim().split(/\s+/)[0] ?? "";
      const known = language !== "" && hljs.getLanguage(language) !== undefined;
      const body = known ? hljs.highlight(text, { language, ignoreIllegals: true }).value : escape(text);
      return `<div class="codeblock"><div class="codebar"><span>${escape(language || "text")}</span>`
        + `<button type="button" data-copy-code="">Copy code</button></div>`
        + `<pre><code class="hljs">${body}</code></pre></div>`;
    },
  },
});

// Math ($…$ and $$…$$, KaTeX) loads with the first text that has a dollar sign: KaTeX and
// its fonts are large and most answers carry none.
let mathVersion = 0;
let mathLoading = false;
const mathListeners = new Set<() => void>();
function loadMath(): void {
  if (mathLoading) return;
  mathLoading = true;
  void import("./math").then(({ mathExtension }) => {
    marked.use(mathExtension());
    mathVersion += 1;
    for (const listener of mathListeners) listener();
  });
}
const subscribeMath = (listener: () => void) => {
  mathListeners.add(listener);
  return () => mathListeners.delete(listener);
};
const mathSnapshot = () => mathVersion;

// Then DOMPurify, the sanitiser made for the job: it drops javascript: and other unsafe
// URLs (and anything else unsafe). Links open in a new tab without handing the opened
// page a reference back to this one.
const purify = createDOMPurify(window);
purify.addHook("afterSanitizeAttributes", (node) => {
  // Code and tables scroll sideways when wide: reachable with the keyboard too.
  if (node.tagName === "PRE" || node.tagName === "TABLE") node.setAttribute("tabindex", "0");
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

/** The text as sanitised HTML (GitHub-flavoured: tables, code blocks, strikethrough, task lists; math once loaded). */
export function renderMarkdown(text: string): string {
  if (text.includes("$")) loadMath();
  return purify.sanitize(marked.parse(text, { async: false }), { ADD_ATTR: ["target"] });
}

/** Copies `text`, saying so in a toast. */
export async function copyText(text: string, notify: (text: string, kind?: "info" | "error") => void): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    notify("Copied");
  } catch {
    notify("Could not copy: the browser refused the clipboard.", "error");
  }
}

/**
 * GitHub-flavoured markdown. Memoised on the text: while an answer streams, the messages
 * above it are not parsed again.
 */
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  useSyncExternalStore(subscribeMath, mathSnapshot);
  const { notify } = useToast();
  const onClick = (event: MouseEvent<HTMLDivElement>) => {
    const button = (event.target as HTMLElement).closest("[data-copy-code]");
    const code = button?.closest(".codeblock")?.querySelector("code");
    if (code) void copyText(code.textContent ?? "", notify);
  };
  return <div className="markdown" onClick={onClick} dangerouslySetInnerHTML={{ __html: renderMarkdown(text) }} />;
});
