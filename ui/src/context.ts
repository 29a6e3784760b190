import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Api } from './api';
import type { Session } from './auth';
import type { DashboardConfig } from './config';

export interface AppContext {
  config: DashboardConfig;
  api: Api;
  session: Session;
}

export const App = createContext<AppContext | null>(null);

export function useApp(): AppContext {
  const ctx = useContext(App);
  if (!ctx) throw new Error('useApp outside the signed-in app');
  return ctx;
}
