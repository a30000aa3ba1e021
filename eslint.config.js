import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '.scratch/**',
      'node_modules/**',
      'dist/**',
      'data/**',
      'coverage/**',
      'test-results/**',
      'bin/**',
    ],
  },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true },
      ],
    },
  },
  {
    files: ['machines/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!xstate$)(?!\\.\\/)',
              allowTypeImports: true,
              message: 'machines/ imports only xstate (and types)',
            },
          ],
        },
      ],
    },
  },
  // The contexts sit below the page and the wiring: what the page serves under an API is handed
  // to that API when the contexts are wired (src/wiring/), never imported by it.
  {
    files: ['src/runs/**/*.ts', 'src/secrets/**/*.ts', 'src/cloud/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(ui|wiring)(/|$)',
              message: 'a context imports neither the page (ui/) nor the wiring',
            },
          ],
        },
      ],
    },
  },
  // HCL is parsed in one place (ADR 0011).
  {
    files: ['src/**/*.ts'],
    ignores: ['src/core/hcl.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@cdktf/hcl2json',
              message: 'HCL is parsed in one place: parseHcl in core/hcl.ts (ADR 0011)',
            },
          ],
        },
      ],
    },
  },
  // The layers, matched at any depth: core/ imports no context, no transport and no
  // configuration (they are passed in); x509/ is a library of its own on core/ alone.
  {
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(runs|secrets|cloud|ui|http|wiring|cli|x509)(/|$)',
              message: 'core/ imports no context, transport or library above it',
            },
            {
              regex: '^(\\.\\./)+(config|app|context|daemon|main|workers|cli)\\.js$',
              message: 'core/ is given its configuration, it does not import it',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/x509/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(runs|secrets|cloud|ui|http|wiring|cli)(/|$)',
              message: 'x509/ is a library: it imports core/ only',
            },
            {
              regex: '^(\\.\\./)+(config|app|context|daemon|main|workers|cli)\\.js$',
              message: 'x509/ is a library: it imports core/ only',
            },
          ],
        },
      ],
    },
  },
  {
    ...tseslint.configs.disableTypeChecked,
    files: ['**/*.js'],
    // The page's scripts are type-checked (src/ui/assets/tsconfig.json, `checkJs`, DOM types).
    ignores: ['src/ui/assets/**'],
  },
  {
    files: ['src/ui/assets/**/*.js'],
    rules: {
      // What the API answers is JSON the page reads as it comes (`any` from `Response.json()`),
      // and the page's parameters are typed where they are shared (lib.js), not in every view.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // An event listener may be async: the DOM ignores what a listener returns.
      '@typescript-eslint/no-misused-promises': [
        'error',
        { checksVoidReturn: { arguments: false } },
      ],
    },
  },
);
