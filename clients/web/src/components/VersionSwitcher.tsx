/** ‹ 2 / 3 ›: moves between the versions of a message (its siblings). */
export function VersionSwitcher({ index, count, onPick, disabled }: {
  index: number;
  count: number;
  onPick: (index: number) => void;
  disabled: boolean;
}) {
  return (
    <span className="versions" role="group" aria-label="Versions">
      <button type="button" aria-label="Previous version" disabled={disabled || index === 0} onClick={() => onPick(index - 1)}>‹</button>
      <span aria-live="polite">{index + 1} / {count}</span>
      <button type="button" aria-label="Next version" disabled={disabled || index + 1 >= count} onClick={() => onPick(index + 1)}>›</button>
    </span>
  );
}
