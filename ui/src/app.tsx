import { AlertPage } from './alerts/alert-page';
import { AlertsPage } from './alerts/alerts-page';
import { AlertRulesPage } from './alerts/rules-page';
import { DashboardPage } from './dashboard/dashboard-page';
import { EndpointPage } from './endpoints/endpoint-page';
import { EndpointsPage } from './endpoints/endpoints-page';
import { FilePage } from './files/file-page';
import { FilesPage } from './files/files-page';
import { FotaJobPage } from './fota/fota-job-page';
import { FotaPage } from './fota/fota-page';
import { HealthPage } from './health/health-page';
import { HistoryPage } from './history/history-page';
import { ImexPage } from './imex/imex-page';
import { AppShell } from './layout/app-shell';
import { LicencePage } from './licence/licence-page';
import { LocationServicesPage } from './location/location-services-page';
import { MapRoute } from './location/map-route';
import { LogsPage } from './logs/logs-page';
import { ReportPage } from './reports/report-page';
import { ReportsPage } from './reports/reports-page';
import { useHashLocation, type HashLocation } from './router/hash-location';
import { NotFoundPage } from './router/not-found-page';
import { matchRoute } from './router/routes';
import { ServicePage } from './services/service-page';
import { ServicesPage } from './services/services-page';
import { useSignIn } from './session/session';
import { SignInPage } from './sign-in/sign-in-page';
import { SignedIn } from './sign-in/signed-in';
import { SolutionsPage } from './solutions/solutions-page';
import { TemplatePage } from './solutions/template-page';
import { OidcMappingPage } from './super/oidc-mapping-page';
import { SuperPage } from './super/super-page';
import { ExecutionsPage } from './triggers/executions-page';
import { TriggerPage } from './triggers/trigger-page';
import { TriggersPage } from './triggers/triggers-page';
import { UsersPage } from './users/users-page';

function Page({ location }: { readonly location: HashLocation }) {
  const route = matchRoute(location.path);
  const search = location.query;
  switch (route.page) {
    case 'dashboard':
      return <DashboardPage />;
    case 'endpoints':
      return <EndpointsPage search={search} />;
    case 'endpoint':
      return <EndpointPage key={route.id} id={route.id} />;
    case 'services':
      return <ServicesPage search={search} />;
    case 'service':
      return <ServicePage key={route.id} id={route.id} />;
    case 'triggers':
      return <TriggersPage search={search} />;
    case 'trigger':
      return <TriggerPage key={route.id} id={route.id} />;
    case 'executions':
      return <ExecutionsPage search={search} />;
    case 'history':
      return <HistoryPage search={search} id={route.id} />;
    case 'files':
      return <FilesPage search={search} />;
    case 'file':
      return <FilePage key={route.name} name={route.name} />;
    case 'fota':
      return <FotaPage search={search} />;
    case 'fota-job':
      return <FotaJobPage key={route.id} id={route.id} />;
    case 'map':
      return <MapRoute search={search} />;
    case 'location':
      return <LocationServicesPage />;
    case 'reports':
      return <ReportsPage />;
    case 'report':
      return <ReportPage key={route.id} id={route.id} search={search} />;
    case 'alerts':
      return <AlertsPage search={search} />;
    case 'alert':
      return <AlertPage key={route.id} id={route.id} />;
    case 'alert-rules':
      return <AlertRulesPage search={search} />;
    case 'logs':
      return <LogsPage search={search} />;
    case 'health':
      return <HealthPage search={search} />;
    case 'users':
      return <UsersPage search={search} />;
    case 'super':
      return <SuperPage search={search} />;
    case 'super-oidc':
      return <OidcMappingPage />;
    case 'imex':
      return <ImexPage />;
    case 'licence':
      return <LicencePage />;
    case 'solutions':
      return <SolutionsPage search={search} />;
    case 'solution':
      return <TemplatePage key={route.id} id={route.id} search={search} />;
    case 'not-found':
      return <NotFoundPage path={location.path} />;
  }
}

/** Sign-in until there are credentials, then the shell with the page the fragment names. */
export function App() {
  const { session } = useSignIn();
  const location = useHashLocation();
  // Back from an external sign-in (GET /auth/oidc/callback): the token is in the fragment.
  if (location.path === '/signed-in') return <SignedIn query={location.query} />;
  if (session === undefined) return <SignInPage />;
  return (
    // A new account starts every page afresh: nothing of the previous account's lists stays on screen.
    <AppShell key={session.credentials.accountId ?? ''} path={location.path}>
      <Page location={location} />
    </AppShell>
  );
}
