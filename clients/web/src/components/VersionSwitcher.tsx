/** ‹ 2 / 3 ›: moves between the versions of a message (its siblings). */
export function VersionSwitcher({ of, index, count, onPick, disabled }: {
  /** The message whose versions these are (the focus stays here after a switch). */
  of: string;
  index: number;
  count: number;
  onPick: (index: number) => void;
  disabled: boolean;
}) {
  const arrow = "inline-flex size-7 cursor-pointer items-center justify-center rounded-md hover:bg-zinc-100 disabled:cursor-not-allowed disabled:opacity-40 dark:hover:bg-zinc-800";
  return (
    <span className="inline-flex items-center text-xs text-zinc-700 dark:text-zinc-300" role="group" aria-label="Versions" data-versions-of={of}>
      <button type="button" aria-label="Previous version" className={arrow} disabled={disabled || index === 0} onClick={() => onPick(index - 1)}>‹</button>
      <span aria-live="polite" className="tabular-nums">{index + 1} / {count}</span>
      <button type="button" aria-label="Next version" className={arrow} disabled={disabled || index + 1 >= count} onClick={() => onPick(index + 1)}>›</button>
    </span>
  );
}
