// The reference web app: chat list grouped by time with search, history paged back on
// scroll, the live stream rendered as it arrives, a stop button. Uses clients/js only.
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

import { App } from "./App";
import "./app.css";

const root = document.getElementById("app");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <App />
    </StrictMode>,
  );
}
