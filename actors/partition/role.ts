import type { RoleFactory } from '../../engine/roles.ts';

export const applyRole: RoleFactory = async () => ({ name: 'apply', close: async () => {} });
