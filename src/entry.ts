#!/usr/bin/env node
/**
 * The single executable's entry point (and the relay's under node): the
 * port-forward relay runs in every pod netns a session reaches, so it starts
 * without loading the daemon's modules (half the memory); everything else is
 * main.ts.
 */
import { RELAY_COMMAND, runPortForwardRelay } from './streaming/relay';

if (process.argv[2] === RELAY_COMMAND) runPortForwardRelay(process.argv[3]);
// a lazy require, so the relay never loads the daemon's modules
// eslint-disable-next-line @typescript-eslint/no-require-imports
else require('./main');
