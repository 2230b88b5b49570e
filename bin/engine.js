#!/usr/bin/env node
// The `engine` command: TypeScript sources run through tsx's loader, no build step.
import { register } from 'tsx/esm/api';

register();
await import('./main.ts');
