#!/usr/bin/env node
// The `troupe` command. Runs the TypeScript sources directly (Node 24 strips types).
import "../src/main.ts"
