import type { ApiData } from '../api/client';
import { ConfirmButton } from '../components/confirm-button';
import { DateTime } from '../components/date-time';

export type AccountUser = ApiData<'/users/{id}'>;

export interface UserTableProps {
  readonly users: readonly AccountUser[];
  /** The signed-in user, marked "you". */
  readonly selfId: string | undefined;
  readonly onEdit: (user: AccountUser) => void;
  readonly onDelete: (user: AccountUser) => Promise<void>;
}

/** The users of the account: email, name, role; edit and delete (with a confirmation) per row. */
export function UserTable({ users, selfId, onEdit, onDelete }: UserTableProps) {
  return (
    <div className="table-scroll">
      <table className="table" aria-label="Users">
        <thead>
          <tr>
            <th scope="col">Email</th>
            <th scope="col">Name</th>
            <th scope="col">Role</th>
            <th scope="col">Created</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {users.map((user) => (
            <tr key={user.id}>
              <td>
                {user.email}
                {user.id === selfId ? <span className="muted"> (you)</span> : null}
              </td>
              <td>{user.name}</td>
              <td>{user.superAdmin ? <span className="badge">Super-Admin</span> : 'user'}</td>
              <td>
                <DateTime value={user.createdAt} />
              </td>
              <td>
                <div className="admin-row-actions">
                  <button type="button" className="button button-quiet" aria-label={`Edit user ${user.email}`} onClick={() => onEdit(user)}>
                    Edit
                  </button>
                  <ConfirmButton
                    label="Delete"
                    name={`Delete user ${user.email}`}
                    busyLabel="Deleting…"
                    question={`Delete ${user.email}? Their sessions end at once.`}
                    onConfirm={() => onDelete(user)}
                  />
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
