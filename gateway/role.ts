import type { RoleFactory } from '../engine/roles.ts';

export const gatewayRole: RoleFactory = async () => ({ name: 'gateway', close: async () => {} });
