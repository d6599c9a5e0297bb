/** React hooks (a separate entry point, so the core needs no React). */
export * from "./hooks.js";
