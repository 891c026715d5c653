export const TOKEN_KEY = 'caseway.token';
