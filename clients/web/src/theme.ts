/**
 * Light or dark: the system's choice (prefers-color-scheme) until the person picks one,
 * which is kept in localStorage. The theme is the `dark` class on <html>.
 */
import { useCallback, useEffect, useState } from "react";

export type ThemeChoice = "system" | "light" | "dark";

const KEY = "chatql.theme";
const query = () => window.matchMedia("(prefers-color-scheme: dark)");

function savedChoice(): ThemeChoice {
  const value = localStorage.getItem(KEY);
  return value === "light" || value === "dark" ? value : "system";
}

function isDark(choice: ThemeChoice): boolean {
  return choice === "dark" || (choice === "system" && query().matches);
}

/** Sets the theme before the first render, so the page never flashes the other one. */
export function applySavedTheme(): void {
  document.documentElement.classList.toggle("dark", isDark(savedChoice()));
}

export function useTheme() {
  const [choice, setChoice] = useState<ThemeChoice>(savedChoice);
  const [dark, setDark] = useState(() => isDark(choice));
  useEffect(() => {
    const update = () => {
      const next = isDark(choice);
      setDark(next);
      document.documentElement.classList.toggle("dark", next);
    };
    update();
    const media = query();
    media.addEventListener("change", update);
    return () => media.removeEventListener("change", update);
  }, [choice]);
  const choose = useCallback((next: ThemeChoice) => {
    if (next === "system") localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, next);
    setChoice(next);
  }, []);
  return { choice, dark, choose };
}
