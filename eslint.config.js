// The linter looks for defects, not style (prettier owns the layout): promises nobody awaits or catches,
// promises handed where a plain callback is expected, names nobody reads, switches that miss a case.
// Type-aware, so it reads each file through its tsconfig (examples/ must be in one too).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', 'data/', 'test/artifacts/'] },
  {
    files: ['{protocol,machines,storage,engine,adapters,visualizations,test,bench,examples}/**/*.ts', 'index.ts', 'client.ts'],
    extends: [js.configs.recommended, tseslint.configs.base, tseslint.configs.eslintRecommended],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // A promise returned from inside try/catch/finally without await escapes its catch and finally.
      '@typescript-eslint/return-await': ['error', 'error-handling-correctness-only'],
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/no-for-in-array': 'error',
      '@typescript-eslint/no-array-delete': 'error',
      '@typescript-eslint/no-implied-eval': 'error',
      // A switch with no default must name every member of its union; a default is a decision already made.
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      // The base rule knows no types; `_` marks what is left unused on purpose, as tsc's noUnused* allow.
      'no-unused-vars': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      // tsc checks fall-through (noFallthroughCasesInSwitch) and allows a commented empty case.
      'no-fallthrough': 'off',
      // Style, not defects: control characters are what protocol/ids.ts refuses; prettier owns spacing.
      'no-control-regex': 'off',
      'no-regex-spaces': 'off',
    },
  },
);
