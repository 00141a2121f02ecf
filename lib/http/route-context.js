export {};
//# sourceMappingURL=route-context.js.map