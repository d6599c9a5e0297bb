// A TypeDoc plugin for the reference pages (`npm run docs:reference`), which the MkDocs
// site renders:
// - each entry point's module is named by its import path (`@chatql/client/react`), not by
//   its file (`react`);
// - members a class inherits from outside the package (TypedDocumentString's dozens of
//   String methods) are left out: the page names the base type instead;
// - a constructor does not link to the one it overrides or inherits (constructor headings
//   carry no anchor of their own);
// - empty brackets outside code (`M[][]`, an array of arrays) are escaped, so Markdown does
//   not read them as an empty reference link.
import { Converter, ReflectionKind } from "typedoc";
import { MarkdownPageEvent } from "typedoc-plugin-markdown";

const NAMES = {
  index: "@chatql/client",
  react: "@chatql/client/react",
  "ai-sdk": "@chatql/client/ai-sdk",
  "assistant-ui": "@chatql/client/assistant-ui",
};

/** The text with `[]` escaped outside fenced blocks and code spans. */
function escapeEmptyBrackets(text) {
  let fenced = false;
  return text
    .split("\n")
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        fenced = !fenced;
        return line;
      }
      if (fenced) return line;
      return line
        .split(/(`+[^`]*`+)/)
        .map((piece) => (piece.startsWith("`") ? piece : piece.replaceAll("[]", "\\[\\]")))
        .join("");
    })
    .join("\n");
}

/** @param {import("typedoc").Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    const project = context.project;
    for (const module of project.getChildrenByKind(ReflectionKind.Module)) {
      module.name = NAMES[module.name] ?? module.name;
    }
    for (const owner of project.getReflectionsByKind(ReflectionKind.ClassOrInterface)) {
      for (const member of [...(owner.children ?? [])]) {
        const origin = member.inheritedFrom;
        if (origin && !origin.reflection && origin.package !== "@chatql/client") {
          project.removeReflection(member);
        }
      }
    }
  });
  app.converter.on(Converter.EVENT_RESOLVE_END, (context) => {
    for (const constructor of context.project.getReflectionsByKind(ReflectionKind.Constructor)) {
      for (const reflection of [constructor, ...(constructor.signatures ?? [])]) {
        reflection.overwrites = undefined;
        reflection.inheritedFrom = undefined;
      }
    }
  });
  app.renderer.on(MarkdownPageEvent.END, (page) => {
    if (page.contents) page.contents = escapeEmptyBrackets(page.contents);
  });
}
