// Two pages, built into ./dist with content-hashed asset names (served with a year-long cache):
// the dashboard (index.html, served at /) and GraphiQL (graphiql.html, served at /graphql).
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  plugins: [react()],
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    // Monaco and Mermaid are big; they load only on the pages that use them.
    chunkSizeWarningLimit: 4000,
    rollupOptions: {
      input: { index: 'index.html', graphiql: 'graphiql.html' },
      onwarn(warning, warn) {
        // React-compiled packages mark modules "use no memo"; bundling drops the hint, harmlessly.
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return;
        warn(warning);
      },
    },
  },
});
