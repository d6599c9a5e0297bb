import createDOMPurify from "dompurify";
import { Marked } from "marked";
import { memo } from "react";

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
  },
});

// Then DOMPurify, the sanitiser made for the job: it drops javascript: and other unsafe
// URLs (and anything else unsafe). Links open in a new tab without handing the opened
// page a reference back to this one.
const purify = createDOMPurify(window);
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

/** The text as sanitised HTML (GitHub-flavoured: tables, code blocks, strikethrough, task lists). */
export function renderMarkdown(text: string): string {
  return purify.sanitize(marked.parse(text, { async: false }), { ADD_ATTR: ["target"] });
}

/**
 * GitHub-flavoured markdown. Memoised on the text: while an answer streams, the messages
 * above it are not parsed again.
 */
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  return <div className="markdown" dangerouslySetInnerHTML={{ __html: renderMarkdown(text) }} />;
});
