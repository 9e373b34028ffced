import { readFileSync } from 'fs';
import * as path from 'path';
import * as sea from 'node:sea';

/**
 * Files crishim reads at run time (the CRI proto, the checkpoint schema), by
 * their path in the repository. Built (dist/) and under ts-jest (src/) they
 * are read from the checkout; inside the single executable `npm run package`
 * builds they are assets of the same name (packaging/sea-config.json lists
 * them), so the executable needs no file beside it.
 */
export const ASSETS = ['proto/runtime/v1/api.proto', 'checkpoints/sandbox-checkpoint.v1.schema.json'] as const;
export type AssetName = (typeof ASSETS)[number];

/** The repository root: this file sits one level below it in src/ and in dist/ alike. */
const REPO_ROOT = path.resolve(__dirname, '..');

/** True when running as the single executable (process.execPath is crishim itself, not node). */
export function isSingleExecutable(): boolean {
  return sea.isSea();
}

export function assetPath(name: AssetName): string {
  return path.join(REPO_ROOT, name);
}

/** A built script, e.g. dist/entry.js (from src/ under ts-jest too, once built). */
export function builtScript(name: string): string {
  return path.join(REPO_ROOT, 'dist', name);
}

export function readAsset(name: AssetName): string {
  return isSingleExecutable() ? sea.getAsset(name, 'utf8') : readFileSync(assetPath(name), 'utf8');
}
