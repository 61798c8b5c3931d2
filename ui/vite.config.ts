// Vite builds the web UI (ui/) into dist/ui, which the service serves at `/` (src/api/routes/ui.ts).
// `npm run build` runs it with `vite build ui`; `npm run dev:ui` serves ui/ with hot reload on :5173 and passes
// every other path to the service on :8080 (IOTBRIDGE_HTTP_PORT of `npm run dev`).
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';
import { precompressPlugin } from './precompress.js';

export default defineConfig({
  // Brotli and gzip copies of the built files, served to browsers that accept them (precompress.ts).
  plugins: [react(), precompressPlugin()],
  base: '/',
  build: {
    outDir: '../dist/ui',
    emptyOutDir: true,
    target: 'es2022',
    // The service sends its own Content-Security-Policy; nothing may need inline code.
    assetsInlineLimit: 0,
  },
  server: {
    proxy: {
      // Vite's own paths (/, /src/…, /@vite/…, /node_modules/…) stay here; the API's go to the service.
      '^/(?!$|index\\.html|favicon\\.svg|src/|@|node_modules/)': { target: 'http://127.0.0.1:8080', changeOrigin: false },
    },
  },
});
