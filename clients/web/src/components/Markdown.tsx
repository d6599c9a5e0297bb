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
import { Marked, type Token } from "marked";
import { memo, useLayoutEffect, useMemo, useRef, useSyncExternalStore, type MouseEvent } from "react";

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

// A streamed answer is lexed again on every delta (marked lexes a long answer in a fraction
// of a millisecond), but only its blocks whose source changed (while it streams: the last)
// are rendered, highlighted, sanitised and put in the page again (see `Markdown`).
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

const sanitize = (html: string) => purify.sanitize(html, { ADD_ATTR: ["target"] });

/** The text as sanitised HTML (GitHub-flavoured: tables, code blocks, strikethrough, task lists; math once loaded). */
export function renderMarkdown(text: string): string {
  if (text.includes("$")) loadMath();
  return sanitize(marked.parse(text, { async: false }));
}

/** One top-level block of a text: its sanitised HTML, and a key that changes when that HTML may. */
interface Block {
  readonly key: string;
  readonly html: string;
}

/** A text as lexed: its top-level tokens, with the math version they were lexed with. */
interface Lexed {
  readonly text: string;
  readonly math: number;
  readonly tokens: readonly Token[];
}

/**
 * The text's top-level tokens. A text that only grew since `previous` (a streaming answer)
 * is lexed again from the start of its last two blocks, when a blank line comes before
 * them: the blocks above cannot change (a block ends at a blank line unless it is a list,
 * which the text after it, not indented, ends), except by a link definition (then, and
 * with math newly loaded, all of it is lexed again).
 */
function lex(text: string, math: number, previous: Lexed | null): Token[] {
  if (previous && previous.math === math && text.startsWith(previous.text) && !text.includes("\r")) {
    const tokens = previous.tokens;
    let blocks = 0;
    let at = tokens.length - 1;
    for (; at > 0; at -= 1) {
      const token = tokens[at];
      if (token?.type === "def") break;
      if (token?.type !== "space" && (blocks += 1) >= 2 && tokens[at - 1]?.type === "space") break;
    }
    if (at > 0 && tokens[at]?.type !== "def" && !tokens.slice(0, at).some((token) => token.type === "def")) {
      const kept = tokens.slice(0, at);
      const offset = kept.reduce((sum, token) => sum + token.raw.length, 0);
      const rest = marked.lexer(text.slice(offset));
      if (Object.keys(rest.links).length === 0) return [...kept, ...rest];
    }
  }
  return [...marked.lexer(text)];
}

// Reference links are resolved against the whole text: a definition may change any block.
const linksOf = (tokens: readonly Token[]) => {
  const defs = tokens.filter((token) => token.type === "def");
  return defs.length > 0 ? JSON.stringify(marked.lexer(defs.map((token) => token.raw).join("")).links) : "";
};

/**
 * Token types whose HTML marked makes, with the renderer above, from escaped text alone:
 * no URL, no attribute, nothing the sanitiser's hooks change (raw HTML is escaped by the
 * renderer). A block made of nothing else is safe as rendered and skips DOMPurify, whose
 * pass costs more than the rest of a streamed delta's work; a block holding anything else
 * (a link, an image, code, a table, math, a type marked adds later) is sanitised.
 */
const INERT = new Set(["paragraph", "text", "strong", "em", "codespan", "del", "br", "escape", "space", "html",
  "heading", "blockquote", "list", "list_item", "checkbox", "hr"]);

/** Whether `token` and everything in it are of the `INERT` types. */
export function inert(token: Token): boolean {
  if (!INERT.has(token.type)) return false;
  const { tokens, items } = token as { tokens?: Token[]; items?: Token[] };
  return (tokens ?? []).every(inert) && (items ?? []).every(inert);
}

/**
 * Sanitised HTML of each of `htmls`, with one pass of DOMPurify for all of them (each in a
 * <div> of its own, taken out again): a pass has a cost of its own, whatever its size.
 */
function sanitizeEach(htmls: readonly string[]): string[] {
  if (htmls.length === 1) return [sanitize(htmls[0] ?? "")];
  const body = purify.sanitize(htmls.map((html) => `<div>${html}</div>`).join(""), { ADD_ATTR: ["target"], RETURN_DOM: true });
  const parts = [...body.children];
  if (parts.length !== htmls.length || body.childNodes.length !== htmls.length) return htmls.map(sanitize);
  return parts.map((part) => part.innerHTML);
}

/**
 * The text as its top-level blocks (a paragraph, a list, a table, a code block…), the same
 * HTML `renderMarkdown` makes, in pieces: marked renders a document's top-level tokens one
 * after another, each on its own (link references resolved while lexing). A block whose
 * key is in `previous` is not rendered again.
 */
function renderBlocks(tokens: readonly Token[], math: number, previous: ReadonlyMap<string, string>): Block[] {
  const links = linksOf(tokens);
  const keys = tokens.map((token) => `${math}\u0000${links}\u0000${token.raw}`);
  const fresh: number[] = [];
  const htmls = keys.map((key, index) => {
    const known = previous.get(key);
    if (known !== undefined) return known;
    const token = tokens[index] as Token;
    const html = marked.parser([token]);
    if (html !== "" && !inert(token)) fresh.push(index);
    return html;
  });
  const sanitized = fresh.length > 0 ? sanitizeEach(fresh.map((index) => htmls[index] ?? "")) : [];
  fresh.forEach((index, n) => (htmls[index] = sanitized[n] ?? ""));
  return keys.map((key, index) => ({ key, html: htmls[index] ?? "" }));
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
 * above it are not parsed again; in the streaming answer only the blocks that changed (the
 * last, mostly) are rendered and replaced, so a delta costs about the same at the end of
 * a long answer as at its start, and the finished blocks above stay as they were in the
 * page (no layout, no selection lost).
 */
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  const math = useSyncExternalStore(subscribeMath, mathSnapshot);
  const { notify } = useToast();
  const cache = useRef<ReadonlyMap<string, string>>(new Map());
  const lexed = useRef<Lexed | null>(null);
  // Rendered while React renders (a chat's first page, as a transition, in slices); put in
  // the page when it commits.
  const blocks = useMemo(() => {
    if (text.includes("$")) loadMath();
    const tokens = lex(text, math, lexed.current);
    lexed.current = { text, math, tokens };
    // Once math has loaded, every block is rendered again (its key changes).
    const made = renderBlocks(tokens, math, cache.current);
    cache.current = new Map(made.map((block) => [block.key, block.html]));
    return made;
  }, [text, math]);
  const element = useRef<HTMLDivElement>(null);
  const shown = useRef<{ keys: string[]; nodes: ChildNode[][] }>({ keys: [], nodes: [] });
  useLayoutEffect(() => {
    const container = element.current;
    if (!container) return;
    const { keys, nodes } = shown.current;
    let same = 0;
    while (same < blocks.length && same < keys.length && keys[same] === blocks[same]?.key) same += 1;
    for (const stale of nodes.slice(same)) for (const node of stale) node.remove();
    keys.length = same;
    nodes.length = same;
    // The new blocks parsed at once, each in a <div> of this document (as the container's
    // own HTML would be), then moved into the container.
    const added = blocks.slice(same);
    if (added.length === 0) return;
    const holder = document.createElement("div");
    holder.innerHTML = added.map((block) => `<div>${block.html}</div>`).join("");
    const wrapped = holder.children.length === added.length;
    added.forEach((block, index) => {
      if (!wrapped) holder.innerHTML = block.html;
      keys.push(block.key);
      nodes.push([...((wrapped ? holder.children[index] : holder)?.childNodes ?? [])]);
    });
    container.append(...nodes.slice(same).flat());
  }, [blocks]);
  const onClick = (event: MouseEvent<HTMLDivElement>) => {
    const button = (event.target as HTMLElement).closest("[data-copy-code]");
    const code = button?.closest(".codeblock")?.querySelector("code");
    if (code) void copyText(code.textContent ?? "", notify);
  };
  return <div ref={element} className="markdown" onClick={onClick} />;
});
