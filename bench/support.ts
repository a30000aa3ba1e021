/** One measured number, as every suite reports it. */
export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  note?: string;
}

/** Median of a list of numbers. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Percentile (0–100) of a list of numbers. */
export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

export const round = (x: number, digits = 0) => Number(x.toFixed(digits));
