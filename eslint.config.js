// The habits that guard the rooms (DESIGN.md, rooms; STYLE.md, conventions 1 and 11): promises are
// awaited or handled, and each room imports only what its name allows. `npm run lint` runs this, then the
// format check, then madge's circular-import check (type imports included, which import-x/no-cycle skips).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { builtinModules } from 'node:module';

const everyRoom = [
  'api',
  'resources',
  'services',
  'store',
  'adapters',
  'workflows',
  'activities',
  'worker',
  'admin',
  'domain',
  'i18n',
  'temporal-dev',
];
const others = (...allowed) => everyRoom.filter((room) => !allowed.includes(room)).map((room) => `./${room}`);

/** What each room may import from the others (DESIGN.md, rooms); resolved paths, so `../x` and `./x` alike. */
const zones = [
  { target: './domain', from: others('domain'), message: 'domain/ holds pure rules and imports only domain/.' },
  { target: './i18n', from: others('i18n', 'domain'), message: 'i18n/ holds words: it imports only domain/.' },
  {
    target: './store',
    from: ['./api', './resources', './services', './workflows', './activities', './worker', './admin'],
    message: 'store/ is documents in, documents out.',
  },
  {
    target: './services',
    from: ['./api', './activities', './worker', './admin'],
    message: 'services/ must not reach up into the API: take resource descriptions from resources/.',
  },
  {
    target: './adapters',
    from: ['./api', './services', './store', './workflows', './activities', './worker', './admin'],
    message: 'adapters/ speak to the outside world only.',
  },
  {
    target: './resources',
    from: others('resources', 'domain', 'store'),
    message: 'resources/ describes resources from their documents: it imports only domain/ and store/.',
  },
].map((zone) => ({ ...zone, from: zone.from.filter((from) => from !== zone.target) }));

const nodeModules = [...builtinModules, ...builtinModules.map((name) => `node:${name}`)];
const deterministic = {
  paths: nodeModules.map((name) => ({ name, message: 'Workflows are deterministic: no Node modules (DESIGN.md, principle 7).' })),
};
/** Workflows may name the world's types (activities, provider results) but never load its code. */
const worldOutsideWorkflows = {
  group: [
    '**/store/**',
    '**/resources/**',
    '**/services/**',
    '**/adapters/**',
    '**/api/**',
    '**/admin/**',
    '**/worker/**',
    '**/activities',
    '**/activities/**',
  ],
  message: 'Workflows reach the world only through activities: import its types only (`import type`).',
  allowTypeImports: true,
};
const onlyStoreKnowsTheDatabase = {
  name: 'mongodb',
  message: 'Only store/ imports mongodb or names a collection (DESIGN.md, rooms).',
  allowTypeImports: true,
};

/** Collection handles stay in store/ (tests may read them): the other rooms call a named store function. */
const storeHandles = {
  group: ['**/store/*'],
  importNamePattern: '^(collections|Collections|findOwnedById|findPage|\\w+Collection)$',
  message: 'Only store/ holds a collection handle: call (or add) a named store function, e.g. listOrders or findOrder.',
};

export default tseslint.config(
  { ignores: ['node_modules/**', '.tools/**', '.data/**', 'test/artifacts/**', 'test/bench/results/**', '**/*.mjs', '**/*.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })] },
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      'import-x/no-restricted-paths': ['error', { zones }],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { paths: [...deterministic.paths, onlyStoreKnowsTheDatabase], patterns: [worldOutsideWorkflows] },
      ],
    },
  },
  {
    files: [
      'api/**/*.ts',
      'services/**/*.ts',
      'activities/**/*.ts',
      'admin/**/*.ts',
      'worker/**/*.ts',
      'resources/**/*.ts',
      'domain/**/*.ts',
      'i18n/**/*.ts',
    ],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths: [onlyStoreKnowsTheDatabase], patterns: [storeHandles] }] },
  },
);
