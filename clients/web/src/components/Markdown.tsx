import ReactMarkdown, { type Components } from "react-markdown";
import remarkGfm from "remark-gfm";

// Raw HTML in the text is never rendered (no rehype-raw): it shows as text. Links open
// in a new tab without handing the opened page a reference back to this one; the
// renderer's own URL filter drops javascript: and other unsafe schemes.
const components: Components = {
  a: ({ node: _node, ...props }) => <a {...props} target="_blank" rel="noopener noreferrer" />,
};

/** GitHub-flavoured markdown (tables, code blocks, strikethrough, task lists). */
export function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown">
      <ReactMarkdown remarkPlugins={[remarkGfm]} components={components} skipHtml={false}>
        {text}
      </ReactMarkdown>
    </div>
  );
}
