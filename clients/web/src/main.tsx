// The web app: a chat client over @chatql/client (chats, the live answer, search, the trash,
// versions of messages). Components live in ./components, named for what they show.
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

import { App } from "./App";
import "./app.css";
import { applySavedTheme } from "./theme";

applySavedTheme();

const root = document.getElementById("app");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <App />
    </StrictMode>,
  );
}
