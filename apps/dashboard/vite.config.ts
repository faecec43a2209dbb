import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// Served by the gateway under /app (see services/gateway/src/dashboard); every asset is bundled, none from a CDN.
export default defineConfig({
  base: "/app/",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // Inlined assets would become data: URLs; keep every asset a same-origin file the CSP allows.
    assetsInlineLimit: 0,
    sourcemap: false,
  },
});
